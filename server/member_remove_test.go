package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime"
)

func removeMember(h *servertest.Harness, t *testing.T, token, workspaceID, userID string) *servertest.Response {
	t.Helper()
	return h.Do(t, servertest.Request{Method: http.MethodDelete, Token: token,
		Path: "/api/workspaces/" + workspaceID + "/members/" + userID})
}

// TestMemberRemove: an owner removes a member; the member's socket closes at once (no periodic
// check runs within the test), the workspace drops out of their list and reads, their user bot
// leaves with them, and member.removed is logged.
func TestMemberRemove(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t, servertest.WithRealtime(func(c *realtime.Config) {
		c.RevalidateInterval = time.Hour
		c.SweepInterval = time.Hour
	}))
	userBot, botToken := persisttest.Bot(t, b.h.Store, b.member.User, b.ws.ID, &persisttest.BotOpts{UserBot: true, Scopes: []string{"bot:read"}})
	b.h.Get(t, "/api/workspaces/"+b.ws.ID+"/channels", botToken.Token).RequireStatus(t, http.StatusOK)
	s := b.dial(t, b.member.Token, "")

	r := removeMember(b.h, t, b.owner.Token, b.ws.ID, b.member.User.ID)
	r.RequireStatus(t, http.StatusOK)
	var body struct {
		Member persist.MemberRemoved `json:"member"`
		Event  struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		} `json:"event"`
	}
	r.Decode(t, &body)
	require.Equal(t, b.member.User.ID, body.Member.UserID)
	require.Equal(t, "member", body.Member.Role)
	require.Equal(t, []string{userBot.ID}, body.Member.RemovedBotIDs)
	require.Equal(t, "member.removed", body.Event.Type)
	require.Len(t, b.h.Events(t, b.ws.ID, "member.removed"), 1)

	require.Equal(t, realtime.CloseRevoked, s.ExpectClose(t), "the removed member's socket closes")
	byID, _ := rolesOf(t, b.h.Get(t, "/api/workspaces", b.member.Token))
	require.NotContains(t, byID, b.ws.ID, "the workspace is gone from the member's list")
	require.NotEqual(t, http.StatusOK, b.h.Get(t, "/api/workspaces/"+b.ws.ID+"/channels", b.member.Token).Status)
	require.NotEqual(t, http.StatusOK, b.h.Get(t, "/api/workspaces/"+b.ws.ID+"/channels", botToken.Token).Status,
		"the member's user bot lost the workspace too")
	_, status := b.h.DialSocket(t, servertest.Dial{Path: "/api/realtime/ws?workspace_id=" + b.ws.ID, Token: b.member.Token})
	require.NotEqual(t, http.StatusSwitchingProtocols, status)

	removeMember(b.h, t, b.owner.Token, b.ws.ID, b.member.User.ID).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
}

func TestMemberRemoveRules(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t)
	mod := e.join(t, persist.RoleModerator)
	mod2 := e.join(t, persist.RoleModerator)
	member := e.join(t, persist.RoleMember)
	guest := e.join(t, persist.RoleGuest)
	outsider := e.h.NewUser(t)
	_, botToken := persisttest.Bot(t, e.h.Store, e.owner.User, e.ws.ID, nil)

	for _, tc := range []struct {
		name   string
		token  string
		target string
		status int
		code   persist.Code
	}{
		{"TheOwnerCannotBeRemoved", e.owner.Token, e.owner.User.ID, 409, persist.CodeConflict},
		{"NotByAModerator", mod.Token, e.owner.User.ID, 409, persist.CodeConflict},
		{"ModeratorNotOnModerator", mod.Token, mod2.User.ID, 403, persist.CodeForbidden},
		{"MemberCannotRemove", member.Token, guest.User.ID, 403, persist.CodeForbidden},
		{"GuestCannotRemove", guest.Token, member.User.ID, 403, persist.CodeForbidden},
		{"OutsiderCannotRemove", outsider.Token, member.User.ID, 403, persist.CodeForbidden},
		{"NotABotToken", botToken.Token, member.User.ID, 403, persist.CodeHumanOnly},
		{"NotAMember", e.owner.Token, outsider.User.ID, 404, persist.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			removeMember(e.h, t, tc.token, e.ws.ID, tc.target).RequireError(t, tc.status, tc.code)
		})
	}
	require.Empty(t, e.eventsOf(t, "member.removed"), "a refusal changes nothing")

	removeMember(e.h, t, mod.Token, e.ws.ID, guest.User.ID).RequireStatus(t, http.StatusOK)
	removeMember(e.h, t, e.owner.Token, e.ws.ID, mod2.User.ID).RequireStatus(t, http.StatusOK)
	require.Len(t, e.eventsOf(t, "member.removed"), 2)
}
