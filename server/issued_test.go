package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// issuedEnv is a workspace with a moderator who issued an invite and a service bot (token with
// channels:write and messages:write), all through the API, for issue 22's defects 3 and 4.
type issuedEnv struct {
	*wsEnv
	mod      servertest.Actor
	general  string
	invite   string
	botToken string
	botID    string
}

func newIssuedEnv(t *testing.T) *issuedEnv {
	t.Helper()
	e := &issuedEnv{wsEnv: newWSEnv(t)}
	e.mod = e.join(t, persist.RoleModerator)
	e.general = persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general").ID
	e.invite = e.inviteToken(t, e.mod.Token, map[string]any{"role": "member"})
	r := e.h.Post(t, e.wsPath("/bots"), e.mod.Token, map[string]any{"display_name": "Mod's bot",
		"scopes": []string{"bot:write", "channels:write"}})
	r.RequireStatus(t, http.StatusCreated)
	e.botToken = e.obj(t, r, "bot_token")["token"].(string)
	e.botID = e.obj(t, r, "bot")["id"].(string)
	return e
}

func (e *issuedEnv) moderate(t *testing.T, userID string, body map[string]any) {
	t.Helper()
	e.patch(t, e.wsPath("/moderation/members/"+userID), e.owner.Token, body).RequireStatus(t, http.StatusOK)
}

func (e *issuedEnv) remove(t *testing.T, userID string) {
	t.Helper()
	e.do(t, http.MethodDelete, e.wsPath("/members/"+userID), e.owner.Token, nil).RequireStatus(t, http.StatusOK)
}

func (e *issuedEnv) botPost(t *testing.T) *servertest.Response {
	t.Helper()
	return e.h.Post(t, "/api/channels/"+e.general+"/messages", e.botToken, map[string]any{"body": "from the bot"})
}

func (e *issuedEnv) botRead(t *testing.T) *servertest.Response {
	t.Helper()
	return e.h.Get(t, "/api/channels/"+e.general+"/messages", e.botToken)
}

// standing returns userID's moderation entry as the owner sees it.
func (e *issuedEnv) standing(t *testing.T, userID string) map[string]any {
	t.Helper()
	r := e.h.Get(t, e.wsPath("/moderation/members?limit=200"), e.owner.Token)
	r.RequireStatus(t, http.StatusOK)
	for _, m := range r.JSON(t)["members"].([]any) {
		entry := m.(map[string]any)
		if entry["user"].(map[string]any)["id"] == userID {
			return entry
		}
	}
	t.Fatalf("%s is not a member", userID)
	return nil
}

// TestWhatAModeratorIssuedFollowsTheirStanding: issue 22, defect 3. An invite admits only while
// its inviter may invite; a block or timeout suspends the invites and service-bot tokens the
// member issued; removal revokes them for good; a block or timeout survives leaving and coming back.
func TestWhatAModeratorIssuedFollowsTheirStanding(t *testing.T) {
	t.Parallel()

	t.Run("BlockSuspendsInvitesAndBotTokens", func(t *testing.T) {
		t.Parallel()
		e := newIssuedEnv(t)
		e.botPost(t).RequireStatus(t, http.StatusCreated)
		e.moderate(t, e.mod.User.ID, map[string]any{"blocked": true})

		newcomer := e.h.NewUser(t)
		e.accept(t, newcomer.Token, e.invite).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.botPost(t).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		// The bot keeps reading, as its blocked issuer does (blocked members keep reading).
		e.botRead(t).RequireStatus(t, http.StatusOK)

		// Unblocked, the moderator's invite and bot work again: a block suspends, it does not revoke.
		e.moderate(t, e.mod.User.ID, map[string]any{"blocked": false})
		e.botPost(t).RequireStatus(t, http.StatusCreated)
		e.accept(t, newcomer.Token, e.invite).RequireStatus(t, http.StatusOK)
	})

	t.Run("TimeoutSuspendsBotTokens", func(t *testing.T) {
		t.Parallel()
		e := newIssuedEnv(t)
		e.moderate(t, e.mod.User.ID, map[string]any{"timeout_minutes": 30})
		e.botPost(t).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.accept(t, e.h.NewUser(t).Token, e.invite).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})

	t.Run("DemotedInviterNoLongerAdmits", func(t *testing.T) {
		t.Parallel()
		e := newIssuedEnv(t)
		e.moderate(t, e.mod.User.ID, map[string]any{"role": "member"})
		e.accept(t, e.h.NewUser(t).Token, e.invite).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})

	t.Run("OwnersModeratorInviteNeedsTheOwnerStill", func(t *testing.T) {
		t.Parallel()
		e := newIssuedEnv(t)
		modInvite := e.inviteToken(t, e.owner.Token, map[string]any{"role": "moderator"})
		// Ownership moves to the moderator: the former owner, now a moderator, no longer appoints
		// moderators, so the invite they minted as owner no longer does either.
		e.h.Post(t, e.wsPath("/transfer-ownership"), e.owner.Token, map[string]any{"user_id": e.mod.User.ID}).
			RequireStatus(t, http.StatusOK)
		e.accept(t, e.h.NewUser(t).Token, modInvite).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})

	t.Run("RemovalRevokesAndTheBlockSurvivesRejoining", func(t *testing.T) {
		t.Parallel()
		e := newIssuedEnv(t)
		s := e.dialBot(t)
		e.moderate(t, e.mod.User.ID, map[string]any{"blocked": true, "moderation_note": "spam"})
		e.remove(t, e.mod.User.ID)
		require.EqualValues(t, 1008, s.ExpectClose(t), "the revoked token's socket closes (SPEC §Errors: 1008)")

		// The moderator's invite is spent for good: it no longer appears and admits nobody.
		newcomer := e.h.NewUser(t)
		e.accept(t, newcomer.Token, e.invite).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		r := e.h.Get(t, e.wsPath("/invites"), e.owner.Token)
		r.RequireStatus(t, http.StatusOK)
		require.Empty(t, r.JSON(t)["invites"])
		// The bot token is revoked, not suspended: it is refused as unknown.
		e.botPost(t).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)

		// The moderator comes back through someone else's invite: still blocked, and the old
		// token stays revoked.
		back := e.inviteToken(t, e.owner.Token, map[string]any{"role": "member"})
		e.accept(t, e.mod.Token, back).RequireStatus(t, http.StatusOK)
		entry := e.standing(t, e.mod.User.ID)
		require.NotNil(t, entry["blocked_at"], "the block survives leaving and rejoining")
		require.Equal(t, "spam", entry["moderation_note"])
		e.h.Post(t, "/api/channels/"+e.general+"/messages", e.mod.Token, map[string]any{"body": "back"}).
			RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.botPost(t).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})

	t.Run("TimeoutSurvivesRejoining", func(t *testing.T) {
		t.Parallel()
		e := newIssuedEnv(t)
		member := e.join(t, persist.RoleMember)
		e.moderate(t, member.User.ID, map[string]any{"timeout_minutes": 60})
		e.remove(t, member.User.ID)
		e.accept(t, member.Token, e.inviteToken(t, e.owner.Token, map[string]any{})).RequireStatus(t, http.StatusOK)
		require.NotNil(t, e.standing(t, member.User.ID)["timeout_until"])
		e.h.Post(t, "/api/channels/"+e.general+"/messages", member.Token, map[string]any{"body": "back"}).
			RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})

	t.Run("RemovedInGoodStandingComesBackClean", func(t *testing.T) {
		t.Parallel()
		e := newIssuedEnv(t)
		member := e.join(t, persist.RoleMember)
		e.remove(t, member.User.ID)
		e.accept(t, member.Token, e.inviteToken(t, e.owner.Token, map[string]any{})).RequireStatus(t, http.StatusOK)
		entry := e.standing(t, member.User.ID)
		require.Nil(t, entry["blocked_at"])
		require.Nil(t, entry["timeout_until"])
		e.h.Post(t, "/api/channels/"+e.general+"/messages", member.Token, map[string]any{"body": "back"}).
			RequireStatus(t, http.StatusCreated)
	})

	t.Run("OtherIssuersTokensSurviveTheRemoval", func(t *testing.T) {
		t.Parallel()
		e := newIssuedEnv(t)
		// The owner mints a second token for the moderator's bot: it rests on the owner.
		ownerTok := persisttest.BotToken(t, e.h.Store, e.owner.User, e.ws.ID, e.botID, "bot:write")
		e.remove(t, e.mod.User.ID)
		e.botPost(t).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		e.h.Post(t, "/api/channels/"+e.general+"/messages", ownerTok.Token, map[string]any{"body": "still here"}).
			RequireStatus(t, http.StatusCreated)
	})
}

// dialBot opens the service bot's WebSocket on the workspace.
func (e *issuedEnv) dialBot(t *testing.T) *servertest.Socket {
	t.Helper()
	s, status := e.h.DialSocket(t, servertest.Dial{Path: "/api/realtime/ws?workspace_id=" + e.ws.ID, Token: e.botToken})
	require.Equal(t, http.StatusSwitchingProtocols, status)
	return s
}

// TestBotNeverExceedsItsIssuer: issue 22, defect 4. A moderator is refused channel edits (SPEC:
// owner only); a service bot the moderator issued a channels:write token to is refused as well,
// at the time of each call, while the owner's service bot is allowed.
func TestBotNeverExceedsItsIssuer(t *testing.T) {
	t.Parallel()
	e := newIssuedEnv(t)
	rename := func(token, name string) *servertest.Response {
		return e.patch(t, "/api/channels/"+e.general, token, map[string]any{"display_title": name})
	}
	rename(e.mod.Token, "by the moderator").RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	rename(e.botToken, "by the moderator's bot").RequireError(t, http.StatusForbidden, persist.CodeForbidden)

	_, ownersTok := persisttest.Bot(t, e.h.Store, e.owner.User, e.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:write", "channels:write"}})
	rename(ownersTok.Token, "by the owner's bot").RequireStatus(t, http.StatusOK)

	// At the time of the call: ownership moves to the moderator, and the two bots trade places.
	e.h.Post(t, e.wsPath("/transfer-ownership"), e.owner.Token, map[string]any{"user_id": e.mod.User.ID}).
		RequireStatus(t, http.StatusOK)
	rename(e.botToken, "by the new owner's bot").RequireStatus(t, http.StatusOK)
	rename(ownersTok.Token, "by the former owner's bot").RequireError(t, http.StatusForbidden, persist.CodeForbidden)
}
