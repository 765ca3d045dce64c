package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// mintToken mints a token as as through the workspace route and returns it with its raw value.
func (w *botWorld) mintToken(t *testing.T, as servertest.Actor, botID string, body map[string]any) persist.BotToken {
	t.Helper()
	r := w.h.Post(t, w.botsPath()+"/"+botID+"/tokens", as.Token, body)
	r.RequireStatus(t, http.StatusCreated)
	var out struct {
		BotToken persist.BotToken `json:"bot_token"`
	}
	r.Decode(t, &out)
	return out.BotToken
}

func revoke(t *testing.T, h *servertest.Harness, as, tokenID string) *servertest.Response {
	t.Helper()
	return h.Post(t, "/api/bot-tokens/"+tokenID+"/revoke", as, nil)
}

func TestBotTokens(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)

	t.Run("MintListRevoke", func(t *testing.T) {
		t.Parallel()
		bot, first := w.serviceBot(t)
		tok := w.mintToken(t, w.owner, bot.ID, map[string]any{"name": " ci ", "scopes": []string{"bot:read", "profile:read"}})
		require.True(t, strings.HasPrefix(tok.Token, "ccb_"))
		require.Equal(t, "ci", tok.Name)
		require.Contains(t, tok.Scopes, persist.ScopeProfileRead)
		require.NotContains(t, tok.Scopes, persist.ScopeMessagesWrite)

		// Several tokens work side by side.
		w.h.Get(t, "/api/me", tok.Token).RequireStatus(t, http.StatusOK)
		w.h.Get(t, "/api/workspaces/"+w.ws.ID+"/bot-commands", first).RequireStatus(t, http.StatusOK)

		list := w.tokens(t, w.member, bot.ID)
		require.Len(t, list, 2)
		require.Equal(t, tok.ID, list[0].ID, "newest first")
		for _, l := range list {
			require.Empty(t, l.Token, "lists are redacted")
		}

		r := revoke(t, w.h, w.moderator.Token, tok.ID)
		r.RequireStatus(t, http.StatusOK)
		var out struct {
			BotToken persist.BotToken `json:"bot_token"`
		}
		r.Decode(t, &out)
		require.NotNil(t, out.BotToken.RevokedAt)
		require.Empty(t, out.BotToken.Token)
		w.h.Get(t, "/api/me", tok.Token).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		again := revoke(t, w.h, w.owner.Token, tok.ID)
		again.RequireStatus(t, http.StatusOK)
		require.Equal(t, r.JSON(t)["bot_token"].(map[string]any)["revoked_at"], again.JSON(t)["bot_token"].(map[string]any)["revoked_at"])
		w.h.Get(t, "/api/workspaces/"+w.ws.ID+"/bot-commands", first).RequireStatus(t, http.StatusOK)
		revoke(t, w.h, w.owner.Token, "btk_unknown").RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	})
	t.Run("ServiceBotTokensAreForManagers", func(t *testing.T) {
		t.Parallel()
		bot, _ := w.serviceBot(t)
		path := w.botsPath() + "/" + bot.ID + "/tokens"
		w.h.Post(t, path, w.member.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		w.h.Post(t, path, w.outsider.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		tok := w.mintToken(t, w.moderator, bot.ID, nil)
		revoke(t, w.h, w.member.Token, tok.ID).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		revoke(t, w.h, w.outsider.Token, tok.ID).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		w.h.Get(t, path, w.guest.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		w.h.Get(t, path, w.outsider.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})
	t.Run("UserBotTokensAreTheOwners", func(t *testing.T) {
		t.Parallel()
		mine := w.createBot(t, w.member, map[string]any{"display_name": "Mine", "owner_user_id": w.member.User.ID}, http.StatusCreated)
		path := w.botsPath() + "/" + mine.Bot.ID + "/tokens"
		w.h.Post(t, path, w.owner.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		revoke(t, w.h, w.owner.Token, mine.BotToken.ID).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		tok := w.mintToken(t, w.member, mine.Bot.ID, nil)
		require.Equal(t, w.member.User.ID, tok.OwnerUserID)
		revoke(t, w.h, w.member.Token, tok.ID).RequireStatus(t, http.StatusOK)
	})
	t.Run("BotTokensCannotManageTokens", func(t *testing.T) {
		t.Parallel()
		bot, token := w.serviceBot(t, "bot:admin", "agent_activity:write")
		path := w.botsPath() + "/" + bot.ID + "/tokens"
		w.h.Post(t, path, token, nil).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
		w.h.Get(t, path, token).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
		w.h.Get(t, "/api/bots/"+bot.ID+"/tokens", token).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
		w.h.Post(t, "/api/bots/"+bot.ID+"/tokens", token, nil).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
		list := w.tokens(t, w.owner, bot.ID)
		revoke(t, w.h, token, list[0].ID).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
	})
	t.Run("UnknownBotOrHumanIs404", func(t *testing.T) {
		t.Parallel()
		w.h.Post(t, w.botsPath()+"/usr_unknown/tokens", w.owner.Token, nil).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		w.h.Post(t, w.botsPath()+"/"+w.member.User.ID+"/tokens", w.owner.Token, nil).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		w.h.Get(t, w.botsPath()+"/"+w.member.User.ID+"/tokens", w.owner.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	})
	t.Run("InvalidScopesAre400", func(t *testing.T) {
		t.Parallel()
		bot, _ := w.serviceBot(t)
		w.h.Post(t, w.botsPath()+"/"+bot.ID+"/tokens", w.owner.Token, map[string]any{"scopes": []string{"root"}}).
			RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})
}

func TestLegacyBotTokenRoutes(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)
	bot, _ := w.serviceBot(t)
	legacy := "/api/bots/" + bot.ID + "/tokens"

	r := w.h.Post(t, legacy, w.owner.Token, map[string]any{"name": "legacy"})
	r.RequireStatus(t, http.StatusCreated)
	require.Equal(t, w.ws.ID, r.JSON(t)["bot_token"].(map[string]any)["workspace_id"], "bound to the bot's only workspace")
	r = w.h.Get(t, legacy, w.member.Token)
	r.RequireStatus(t, http.StatusOK)
	require.Len(t, r.JSON(t)["bot_tokens"], 2)
	w.h.Get(t, legacy, w.outsider.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	w.h.Post(t, legacy, w.member.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)

	// Once the bot is in a second workspace the legacy routes refuse to guess.
	other := persisttest.Workspace(t, w.h.Store, w.outsider.User.ID)
	persisttest.Member(t, w.h.Store, other.ID, bot.ID, persist.RoleBot)
	w.h.Get(t, legacy, w.owner.Token).RequireError(t, http.StatusConflict, persist.CodeConflict)
	w.h.Post(t, legacy, w.owner.Token, nil).RequireError(t, http.StatusConflict, persist.CodeConflict)
	stranger := w.h.NewUser(t)
	w.h.Get(t, legacy, stranger.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	w.h.Get(t, w.botsPath()+"/"+bot.ID+"/tokens", w.owner.Token).RequireStatus(t, http.StatusOK)
	w.h.Get(t, "/api/bots/usr_unknown/tokens", w.owner.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
}

func TestBotTokenAuthentication(t *testing.T) {
	t.Parallel()
	clock := persisttest.NewClock()
	w := newBotWorld(t, servertest.WithClock(clock))

	t.Run("LastUsedAtFollowsEachAuthentication", func(t *testing.T) {
		t.Parallel()
		bot, token := w.serviceBot(t, "profile:read")
		require.Nil(t, w.tokens(t, w.owner, bot.ID)[0].LastUsedAt, "never used yet")
		w.h.Get(t, "/api/me", token).RequireStatus(t, http.StatusOK)
		used := w.tokens(t, w.owner, bot.ID)[0].LastUsedAt
		require.NotNil(t, used)
		require.Equal(t, clock.Now(), *used)
		// A refused request still authenticated the token.
		clock.Advance(time.Hour)
		w.h.Get(t, "/api/workspaces/"+w.ws.ID+"/bot-commands", token).RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
		require.Equal(t, clock.Now(), *w.tokens(t, w.owner, bot.ID)[0].LastUsedAt)
	})
	t.Run("UnknownRevokedAndMalformedAre401", func(t *testing.T) {
		t.Parallel()
		w.h.Get(t, "/api/me", "ccb_unknown").RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		w.h.Get(t, "/api/me", "xyz_unknown").RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})
	t.Run("ATokenNeverReachesAnotherWorkspace", func(t *testing.T) {
		t.Parallel()
		bot, token := w.serviceBot(t, "bot:admin")
		other := persisttest.Workspace(t, w.h.Store, w.owner.User.ID)
		persisttest.Member(t, w.h.Store, other.ID, bot.ID, persist.RoleBot) // joined later: still not reachable
		w.h.Get(t, "/api/workspaces/"+other.ID+"/bot-commands", token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		w.h.Get(t, "/api/workspaces/"+w.ws.ID+"/bot-commands", token).RequireStatus(t, http.StatusOK)
	})
	t.Run("RouteRequirements", func(t *testing.T) {
		t.Parallel()
		_, none := w.serviceBot(t, "channels:read")
		_, all := w.serviceBot(t, "bot:admin", "agent_activity:write")
		w.h.Get(t, "/api/me", none).RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
		w.h.Get(t, "/api/me", all).RequireStatus(t, http.StatusOK)
		patch := servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: all, Body: map[string]any{"display_name": "Renamed"}}
		w.h.Do(t, patch).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
		putMenu(t, w.h, none, []map[string]any{}).RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
		putMenu(t, w.h, w.member.Token, []map[string]any{}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		putMenu(t, w.h, all, []map[string]any{}).RequireStatus(t, http.StatusOK)
	})
	t.Run("LogoutWithABotTokenRevokesNothing", func(t *testing.T) {
		t.Parallel()
		_, token := w.serviceBot(t, "profile:read")
		w.h.Post(t, "/api/auth/logout", token, nil).RequireStatus(t, http.StatusOK)
		w.h.Get(t, "/api/me", token).RequireStatus(t, http.StatusOK)
	})
	t.Run("ImpersonationHeaderNeverActsAsABot", func(t *testing.T) {
		t.Parallel()
		bot, _ := w.serviceBot(t)
		r := w.h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Header: map[string]string{"X-Natter-User": bot.ID}})
		r.RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})
}
