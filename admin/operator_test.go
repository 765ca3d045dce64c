package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// runBoth executes the command line in-process and returns stdout, stderr and the error.
func runBoth(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := admin.Run(t.Context(), append([]string{"natter"}, args...), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := run(t, args...)
		require.NoError(t, err, "%v", args)
		require.True(t, strings.HasPrefix(out, "natter version "), out)
		require.Contains(t, out, ", commit ", "the commit the binary was built from")
		require.Contains(t, out, ", go1.", "the Go version")
	}
}

// TestAdminErrorsNameTheCommand: every admin error reads "<command>: <why>" (main adds "natter: ").
func TestAdminErrorsNameTheCommand(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	for _, tc := range []struct {
		args   []string
		prefix string
	}{
		{[]string{"admin", "member", "add", "--workspace", "nowhere", "--email", "a@example.com"}, "admin member add: --workspace nowhere: "},
		{[]string{"admin", "member", "remove", "--workspace", "nowhere", "--email", "a@example.com"}, "admin member remove: --workspace nowhere: "},
		{[]string{"admin", "events", "prune", "--workspace", "nowhere"}, "admin events prune: "},
		{[]string{"admin", "magic-link", "create", "--email", "not-an-email"}, "admin magic-link create: "},
	} {
		_, err := run(t, append(tc.args, "--database-url", url)...)
		require.Error(t, err, "%v", tc.args)
		require.True(t, strings.HasPrefix(err.Error(), tc.prefix), err.Error())
		require.NotContains(t, err.Error(), "natter", "main adds the one prefix")
		require.NotContains(t, err.Error(), "not_found:", "the API's error codes are not shown to people")
	}
}

func TestAdminWorkspaceAndMembers(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	ctx := context.Background()
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	person := persisttest.User(t, store, nil)
	persisttest.Member(t, store, w.ID, person.ID, persist.RoleMember)
	bot, _ := persisttest.Bot(t, store, person, w.ID, &persisttest.BotOpts{UserBot: true})
	base := []string{"--database-url", url}

	out, err := run(t, append([]string{"admin", "workspace", "list", "--json"}, base...)...)
	require.NoError(t, err)
	var list struct {
		Workspaces []struct {
			Workspace   struct{ ID, Slug string } `json:"workspace"`
			OwnerID     string                    `json:"owner_user_id"`
			MemberCount int                       `json:"member_count"`
		} `json:"workspaces"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list), out)
	require.Len(t, list.Workspaces, 1)
	require.Equal(t, w.ID, list.Workspaces[0].Workspace.ID)
	require.Equal(t, owner.ID, list.Workspaces[0].OwnerID)
	require.Equal(t, 3, list.Workspaces[0].MemberCount, "owner, person and the person's bot")
	out, err = run(t, append([]string{"admin", "workspace", "list"}, base...)...)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(out, "1 workspaces\n"+w.ID+"\t"+w.Slug), out)

	out, err = run(t, append([]string{"admin", "member", "list", "--workspace", w.Slug, "--json"}, base...)...)
	require.NoError(t, err)
	var members struct {
		Members []struct {
			User  struct{ ID string } `json:"user"`
			Role  string              `json:"role"`
			Email string              `json:"email"`
		} `json:"members"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &members), out)
	require.Len(t, members.Members, 3)
	require.Equal(t, owner.ID, members.Members[0].User.ID)
	require.Equal(t, "owner", members.Members[0].Role)
	require.Equal(t, person.Email, members.Members[1].Email)
	out, err = run(t, append([]string{"admin", "member", "list", "--workspace", w.Slug, "--role", "bot"}, base...)...)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(out, "1 members\n"+bot.ID+"\tbot"), out)

	_, err = run(t, append([]string{"admin", "member", "remove", "--workspace", w.Slug, "--user", owner.ID}, base...)...)
	require.ErrorContains(t, err, "the workspace owner cannot be removed")

	out, err = run(t, append([]string{"admin", "member", "remove", "--workspace", w.Slug, "--email", person.Email}, base...)...)
	require.NoError(t, err)
	require.Equal(t, person.Email+" ("+person.ID+") left "+w.Slug+", with 1 user bots of theirs\n", out)
	for _, id := range []string{person.ID, bot.ID} {
		_, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Member, error) { return tx.MemberGet(ctx, w.ID, id) })
		require.Error(t, err, "%s is no longer a member", id)
	}
	events, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.EventPage, error) {
		return tx.EventPageFor(ctx, persist.ActorFor(owner), w.ID, 0, 500, false)
	})
	require.NoError(t, err)
	require.Equal(t, "member.removed", events.Events[len(events.Events)-1].Type)

	_, err = run(t, append([]string{"admin", "member", "remove", "--workspace", w.Slug, "--email", person.Email}, base...)...)
	require.ErrorContains(t, err, "not found")
}

// TestOwnerPinAfterBootstrap: once the default workspace has an owner, pinning someone else is
// refused and creates nobody.
func TestOwnerPinAfterBootstrap(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	ctx := context.Background()
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	b, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Bootstrap, error) { return tx.DevBootstrap(ctx) })
	require.NoError(t, err)

	_, err = run(t, "admin", "owner", "pin", "--database-url", url, "--email", "late@example.com", "--display-name", "Late")
	require.ErrorContains(t, err, "already has its owner, "+b.Owner.Email)
	_, err = persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) { return tx.UserGetByEmail(ctx, "late@example.com") })
	require.Error(t, err, "a refused pin creates no account")

	out, err := run(t, "admin", "owner", "pin", "--database-url", url, "--email", b.Owner.Email, "--display-name", "Same", "--json")
	require.NoError(t, err, "pinning the owner there is answers that owner")
	var got struct{ User persist.User }
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Equal(t, b.Owner.ID, got.User.ID)
}

// TestPersonAndBotNamesAreApart: a person's display name and a bot's name read different
// environment variables, so one shell can set both.
func TestPersonAndBotNamesAreApart(t *testing.T) {
	url := persisttest.URL(t)
	ctx := context.Background()
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	t.Setenv("NATTER_DISPLAY_NAME", "Pat Person")
	t.Setenv("NATTER_BOT_NAME", "Deploy Bot")

	out, err := run(t, "admin", "owner", "pin", "--database-url", url, "--email", "pat@example.com")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(out, "owner pinned: usr_"), out)
	b, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Bootstrap, error) { return tx.DevBootstrap(ctx) })
	require.NoError(t, err)
	require.Equal(t, "Pat Person", b.Owner.DisplayName)

	out, err = run(t, "admin", "bot", "create", "--database-url", url, "--workspace", b.Workspace.Slug, "--created-by", "pat@example.com")
	require.NoError(t, err)
	var created struct{ Bot persist.PublicUser }
	require.NoError(t, json.Unmarshal([]byte(out), &created), out)
	require.Equal(t, "Deploy Bot", created.Bot.DisplayName)
}

// TestAdminJSONOutput: with --json every admin command prints exactly one JSON object on stdout,
// and without it a sentence (never JSON) — bot create, whose contract prints JSON, aside.
func TestAdminJSONOutput(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	ctx := context.Background()
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	owner := persisttest.User(t, store, &persisttest.UserOpts{Email: persisttest.Ptr("json-owner@example.com")})
	w := persisttest.Workspace(t, store, owner.ID)
	db := []string{"--database-url", url}
	for _, tc := range []struct {
		args  []string
		stdin string
		key   string // a key the JSON object has
	}{
		{args: []string{"migrate"}, key: "applied"},
		{args: []string{"admin", "workspace", "list"}, key: "workspaces"},
		{args: []string{"admin", "member", "add", "--workspace", w.Slug, "--email", "json-member@example.com"}, key: "member"},
		{args: []string{"admin", "member", "list", "--workspace", w.Slug}, key: "members"},
		{args: []string{"admin", "magic-link", "create", "--email", "json-member@example.com"}, key: "token"},
		{args: []string{"admin", "owner", "pin", "--email", "json-owner@example.com", "--display-name", "Owner"}, key: "user"},
		{args: []string{"admin", "password", "set", "--email", "json-member@example.com"}, stdin: "correct horse battery", key: "password"},
		{args: []string{"admin", "password", "clear", "--email", "json-member@example.com"}, key: "password"},
		{args: []string{"admin", "events", "prune", "--workspace", w.ID, "--keep-latest", "5"}, key: "deleted"},
		{args: []string{"admin", "push", "rotate-key"}, key: "fingerprint"},
		{args: []string{"admin", "uploads", "retry-deletions", "--upload-dir", t.TempDir()}, key: "deleted"},
		{args: []string{"admin", "member", "remove", "--workspace", w.Slug, "--email", "json-member@example.com"}, key: "member"},
	} {
		args := append(append(append([]string{}, tc.args...), db...), "--json")
		out, err := runWithInput(t, tc.stdin, args...)
		require.NoError(t, err, "%v", tc.args)
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &got), "%v: %s", tc.args, out)
		require.Contains(t, got, tc.key, "%v", tc.args)
		require.Equal(t, 1, strings.Count(strings.TrimSpace(out), "\n")+1, "one line: %v", tc.args)
	}
	out, err := run(t, "admin", "workspace", "list", "--database-url", url)
	require.NoError(t, err)
	require.False(t, json.Valid([]byte(out)), "a sentence by default")
}
