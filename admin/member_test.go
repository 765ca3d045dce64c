package admin_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestAdminMemberAdd(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	ctx := context.Background()
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	known := persisttest.User(t, store, nil)
	add := func(args ...string) (persist.Member, error) {
		out, err := run(t, append([]string{"admin", "member", "add", "--json", "--database-url", url}, args...)...)
		if err != nil {
			return persist.Member{}, err
		}
		var got struct{ Member persist.Member }
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		return got.Member, nil
	}

	m, err := add("--workspace", w.Slug, "--email", "New.Person@Example.com", "--role", "guest")
	require.NoError(t, err)
	require.Equal(t, persist.RoleGuest, m.Role)
	require.Equal(t, w.ID, m.WorkspaceID)
	created, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) {
		return tx.UserGetByEmail(ctx, "new.person@example.com")
	})
	require.NoError(t, err)
	require.Equal(t, created.ID, m.UserID)
	channels, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Channel, error) {
		return tx.ChannelList(ctx, persist.ActorFor(owner), w.ID)
	})
	require.NoError(t, err)
	require.Len(t, channels, 1, "a new guest finds the guest channel")
	require.Equal(t, persist.GuestChannel, channels[0].Name)

	m, err = add("--workspace", w.ID, "--user", known.ID)
	require.NoError(t, err)
	require.Equal(t, persist.RoleMember, m.Role, "member is the default role")
	_, err = add("--workspace", w.RouteID, "--user", known.ID, "--role", "moderator")
	require.ErrorContains(t, err, "is already a member of "+w.Slug+"; pass --update to make them a moderator")
	m, err = persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Member, error) { return tx.MemberGet(ctx, w.ID, known.ID) })
	require.NoError(t, err)
	require.Equal(t, persist.RoleMember, m.Role, "a refused add changes nothing")

	out, err := run(t, "admin", "member", "add", "--database-url", url, "--workspace", w.Slug, "--user", known.ID)
	require.NoError(t, err)
	require.Contains(t, out, "is already a member of "+w.Slug+"; nothing changed")

	out, err = run(t, "admin", "member", "add", "--database-url", url, "--workspace", w.Slug, "--user", known.ID,
		"--role", "moderator", "--update")
	require.NoError(t, err)
	require.Equal(t, known.Email+" ("+known.ID+") is now a moderator of "+w.Slug+"\n", out)
	m, err = persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Member, error) { return tx.MemberGet(ctx, w.ID, known.ID) })
	require.NoError(t, err)
	require.Equal(t, persist.RoleModerator, m.Role, "--update changes the role")
	_, err = add("--workspace", w.Slug, "--user", owner.ID, "--role", "guest", "--update")
	require.ErrorContains(t, err, "ownership transfer", "the owner's role is not --update's to change")

	for _, args := range [][]string{
		{"--workspace", w.ID},
		{"--workspace", w.ID, "--user", known.ID, "--email", "x@example.com"},
		{"--workspace", "no-such-workspace", "--user", known.ID},
		{"--workspace", w.ID, "--user", "usr_nobody"},
		{"--workspace", w.ID, "--email", "x@example.com", "--role", "owner"},
		{"--workspace", w.ID, "--email", "not-an-email"},
	} {
		_, err := add(args...)
		require.Error(t, err, "%v", args)
	}
}
