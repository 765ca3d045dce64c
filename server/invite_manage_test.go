package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// inviteIDs lists the open invites' ids as token sees them, checking no token is in the list.
func (e *wsEnv) inviteIDs(t *testing.T, token string) []string {
	t.Helper()
	r := e.h.Get(t, e.wsPath("/invites"), token)
	r.RequireStatus(t, http.StatusOK)
	ids := []string{}
	for _, raw := range r.JSON(t)["invites"].([]any) {
		inv := raw.(map[string]any)
		require.NotContains(t, inv, "token", "a listed invite carries no token")
		ids = append(ids, inv["id"].(string))
	}
	return ids
}

func TestInviteListAndRevoke(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t)
	mod := e.join(t, persist.RoleModerator)
	member := e.join(t, persist.RoleMember)
	guest := e.join(t, persist.RoleGuest)

	create := func(token, role string) (id, raw string) {
		r := e.invite(t, token, map[string]any{"role": role})
		r.RequireStatus(t, http.StatusCreated)
		inv := e.obj(t, r, "invite")
		return inv["id"].(string), inv["token"].(string)
	}
	first, _ := create(e.owner.Token, "member")
	second, secondToken := create(mod.Token, "guest")
	forMod, _ := create(e.owner.Token, "moderator")
	used, usedToken := create(e.owner.Token, "member")
	e.accept(t, e.h.NewUser(t).Token, usedToken).RequireStatus(t, http.StatusOK)

	// Newest first; a used invite is not open.
	require.Equal(t, []string{forMod, second, first}, e.inviteIDs(t, e.owner.Token))
	require.Equal(t, []string{forMod, second, first}, e.inviteIDs(t, mod.Token))
	for _, who := range []string{member.Token, guest.Token, e.h.NewUser(t).Token} {
		e.h.Get(t, e.wsPath("/invites"), who).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	}

	e.do(t, http.MethodDelete, e.wsPath("/invites/"+first), member.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	e.do(t, http.MethodDelete, e.wsPath("/invites/"+forMod), mod.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	e.do(t, http.MethodDelete, e.wsPath("/invites/"+used), e.owner.Token, nil).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	e.do(t, http.MethodDelete, e.wsPath("/invites/inv_unknown"), e.owner.Token, nil).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	require.Equal(t, []string{forMod, second, first}, e.inviteIDs(t, e.owner.Token), "refusals change nothing")

	r := e.do(t, http.MethodDelete, e.wsPath("/invites/"+second), mod.Token, nil)
	r.RequireStatus(t, http.StatusOK)
	require.Equal(t, second, e.obj(t, r, "invite")["id"])
	require.NotContains(t, e.obj(t, r, "invite"), "token")
	require.Equal(t, []string{forMod, first}, e.inviteIDs(t, e.owner.Token))
	e.do(t, http.MethodDelete, e.wsPath("/invites/"+second), mod.Token, nil).RequireError(t, http.StatusNotFound, persist.CodeNotFound)

	// A revoked token looks exactly like an unknown one.
	revoked := e.accept(t, e.h.NewUser(t).Token, secondToken)
	revoked.RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	unknown := e.accept(t, e.h.NewUser(t).Token, persist.PrefixInviteToken+"unknown")
	require.Equal(t, string(unknown.Body), string(revoked.Body))

	// A timed-out moderator may read the list but not revoke, and the refusal changes nothing.
	e.moderate(t, e.owner.Token, mod.User.ID, map[string]any{"timeout_minutes": 10}).RequireStatus(t, http.StatusOK)
	require.Equal(t, []string{forMod, first}, e.inviteIDs(t, mod.Token))
	e.do(t, http.MethodDelete, e.wsPath("/invites/"+first), mod.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	require.Equal(t, []string{forMod, first}, e.inviteIDs(t, e.owner.Token))

	// Another workspace's invite is not found through this one.
	other := persisttest.Workspace(t, e.h.Store, e.owner.User.ID)
	e.do(t, http.MethodDelete, "/api/workspaces/"+other.ID+"/invites/"+first, e.owner.Token, nil).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
}

func TestMemberStanding(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t)
	mod := e.join(t, persist.RoleModerator)
	member := e.join(t, persist.RoleMember)
	guest := e.join(t, persist.RoleGuest)

	standing := func(token string) map[string]any {
		t.Helper()
		r := e.h.Get(t, e.wsPath("/membership"), token)
		r.RequireStatus(t, http.StatusOK)
		return e.obj(t, r, "member")
	}
	m := standing(member.Token)
	require.Equal(t, "member", m["role"])
	require.Equal(t, member.User.ID, m["user"].(map[string]any)["id"])
	require.NotContains(t, m, "timeout_until")
	require.NotContains(t, m, "posts_remaining", "only guests have a post budget")

	e.moderate(t, mod.Token, member.User.ID, map[string]any{"timeout_minutes": 30, "moderation_note": "spam in #general"}).RequireStatus(t, http.StatusOK)
	m = standing(member.Token)
	require.Contains(t, m, "timeout_until")
	require.NotContains(t, m, "moderation_note", "the note is the moderators' own")
	require.NotContains(t, m, "moderation_by")
	e.moderate(t, mod.Token, member.User.ID, map[string]any{"blocked": true}).RequireStatus(t, http.StatusOK)
	require.Contains(t, standing(member.Token), "blocked_at")

	// A guest sees the three posts a day the spec gives and what is left of them.
	g := standing(guest.Token)
	require.Equal(t, "guest", g["role"])
	require.EqualValues(t, 3, g["post_limit"])
	require.EqualValues(t, 3, g["posts_remaining"])
	r := e.h.Get(t, e.wsPath("/channels"), guest.Token)
	var got struct{ Channels []persist.Channel }
	r.Decode(t, &got)
	require.Len(t, got.Channels, 1)
	guestRoom := got.Channels[0].ID
	e.h.Post(t, "/api/channels/"+guestRoom+"/messages", guest.Token, map[string]any{"body": "hello"}).RequireStatus(t, http.StatusCreated)
	require.EqualValues(t, 2, standing(guest.Token)["posts_remaining"])

	e.h.Get(t, e.wsPath("/membership"), e.h.NewUser(t).Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
}
