package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime"
	"github.com/natterchat/natter/streams"
)

func TestAppInstallationCreate(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t)
	general := persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")

	t.Run("InstallsWithItsOwnToken", func(t *testing.T) {
		t.Parallel()
		r := e.h.Post(t, e.wsPath("/app-installations"), e.owner.Token, map[string]any{"app_slug": "acme",
			"display_name": "Acme", "bot_user_id": e.bot.ID, "config": map[string]any{"default_channel_id": general.ID, "x": 1}})
		r.RequireStatus(t, http.StatusCreated)
		inst := e.obj(t, r, "app_installation")
		require.Equal(t, "acme", inst["app_slug"])
		require.Equal(t, e.bot.ID, inst["bot_user_id"])
		require.Equal(t, general.ID, inst["config"].(map[string]any)["default_channel_id"])
		token := e.obj(t, r, "bot_token")["token"].(string)
		e.h.Get(t, "/api/workspaces/"+e.ws.ID, token).RequireStatus(t, http.StatusOK)
	})
	t.Run("AppSlugsAreShared", func(t *testing.T) {
		t.Parallel()
		a, _ := e.install(t, nil)
		b, _ := e.install(t, nil)
		require.NotEqual(t, a, b)
	})
	t.Run("BotMustBeABotMemberOfTheWorkspace", func(t *testing.T) {
		t.Parallel()
		member := e.join(t, persist.RoleMember)
		for _, id := range []string{member.User.ID, "usr_01j00000000000000000000000"} {
			r := e.h.Post(t, e.wsPath("/app-installations"), e.owner.Token, map[string]any{"app_slug": "acme", "bot_user_id": id})
			r.RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		}
		other := persisttest.Workspace(t, e.h.Store, e.owner.User.ID)
		stranger, _ := persisttest.Bot(t, e.h.Store, e.owner.User, other.ID, nil)
		r := e.h.Post(t, e.wsPath("/app-installations"), e.owner.Token, map[string]any{"app_slug": "acme", "bot_user_id": stranger.ID})
		r.RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	})
	t.Run("ConfigIsChecked", func(t *testing.T) {
		t.Parallel()
		for _, config := range []any{"x", []int{1}, map[string]any{"default_channel_id": "chn_nope"}, map[string]any{"default_channel_id": 5}} {
			r := e.h.Post(t, e.wsPath("/app-installations"), e.owner.Token, map[string]any{"app_slug": "acme",
				"bot_user_id": e.bot.ID, "config": config})
			r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
	})
	t.Run("OnlyHumanOwnersAndModerators", func(t *testing.T) {
		t.Parallel()
		body := map[string]any{"app_slug": "acme", "bot_user_id": e.bot.ID}
		member := e.join(t, persist.RoleMember)
		e.h.Post(t, e.wsPath("/app-installations"), member.Token, body).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		mod := e.join(t, persist.RoleModerator)
		e.h.Post(t, e.wsPath("/app-installations"), mod.Token, body).RequireStatus(t, http.StatusCreated)
		_, admin := persisttest.Bot(t, e.h.Store, e.owner.User, e.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:admin"}})
		e.h.Post(t, e.wsPath("/app-installations"), admin.Token, body).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
	})
	t.Run("SetupNonceReplayReusesInstallationBotAndTokenRow", func(t *testing.T) {
		t.Parallel()
		body := map[string]any{"app_slug": "acme", "bot_user_id": e.bot.ID, "setup_nonce": "nonce-0123456789-abc"}
		first := e.h.Post(t, e.wsPath("/app-installations"), e.owner.Token, body)
		first.RequireStatus(t, http.StatusCreated)
		second := e.h.Post(t, e.wsPath("/app-installations"), e.owner.Token, body)
		second.RequireStatus(t, http.StatusOK)
		require.Equal(t, e.obj(t, first, "app_installation")["id"], e.obj(t, second, "app_installation")["id"])
		require.Equal(t, e.obj(t, first, "app_installation")["bot_user_id"], e.obj(t, second, "app_installation")["bot_user_id"])
		t1, t2 := e.obj(t, first, "bot_token"), e.obj(t, second, "bot_token")
		require.Equal(t, t1["id"], t2["id"], "the same token row")
		require.NotEqual(t, t1["token"], t2["token"], "a fresh raw token")
		e.h.Get(t, "/api/workspaces/"+e.ws.ID, t1["token"].(string)).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		e.h.Get(t, "/api/workspaces/"+e.ws.ID, t2["token"].(string)).RequireStatus(t, http.StatusOK)
	})
}

func TestAppInstallationList(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t)
	id, _ := e.install(t, nil)
	revoked, _ := e.install(t, nil)
	e.h.Post(t, "/api/app-installations/"+revoked+"/revoke", e.owner.Token, nil).RequireStatus(t, http.StatusOK)
	member := e.join(t, persist.RoleMember)
	r := e.h.Get(t, e.wsPath("/app-installations"), member.Token)
	r.RequireStatus(t, http.StatusOK)
	list := r.JSON(t)["app_installations"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, id, list[0].(map[string]any)["id"])
	guest := e.join(t, persist.RoleGuest)
	e.h.Get(t, e.wsPath("/app-installations"), guest.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	outsider := e.h.NewUser(t)
	e.h.Get(t, e.wsPath("/app-installations"), outsider.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
}

func TestAppInstallationRevoke(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t)
	attach := func(t *testing.T, inst string) {
		for _, c := range []string{"/one", "/two"} {
			e.h.Post(t, e.wsPath("/slash-commands"), e.owner.Token, map[string]any{"app_installation_id": inst,
				"command": c + inst[len(inst)-6:], "callback_url": "https://hooks.example.com/x"}).RequireStatus(t, http.StatusCreated)
		}
		e.h.Post(t, e.wsPath("/event-subscriptions"), e.owner.Token, map[string]any{"app_installation_id": inst,
			"event_types": []string{"*"}, "callback_url": "https://hooks.example.com/x"}).RequireStatus(t, http.StatusCreated)
	}
	revoke := func(t *testing.T, inst string, body any) map[string]any {
		r := e.h.Post(t, "/api/app-installations/"+inst+"/revoke", e.owner.Token, body)
		r.RequireStatus(t, http.StatusOK)
		require.NotNil(t, e.obj(t, r, "installation")["revoked_at"])
		return e.obj(t, r, "revoked")
	}

	t.Run("DefaultsRevokeCommandsAndSubscriptionsNotTokens", func(t *testing.T) {
		t.Parallel()
		inst, token := e.install(t, nil)
		attach(t, inst)
		require.Equal(t, map[string]any{"slash_commands": 2.0, "event_subscriptions": 1.0, "bot_tokens": 0.0}, revoke(t, inst, nil))
		e.h.Get(t, "/api/workspaces/"+e.ws.ID, token).RequireStatus(t, http.StatusOK)
		for _, list := range []string{"slash-commands", "event-subscriptions"} {
			r := e.h.Get(t, e.wsPath("/"+list), e.owner.Token)
			for _, item := range r.JSON(t)[map[string]string{"slash-commands": "slash_commands", "event-subscriptions": "event_subscriptions"}[list]].([]any) {
				require.NotEqual(t, inst, item.(map[string]any)["app_installation_id"])
			}
		}
		require.Equal(t, map[string]any{"slash_commands": 0.0, "event_subscriptions": 0.0, "bot_tokens": 0.0},
			revoke(t, inst, map[string]any{"revoke_bot_tokens": true}), "revoking again changes nothing")
	})
	t.Run("BotTokensWhenAskedAreAllOfTheBotsInTheWorkspace", func(t *testing.T) {
		t.Parallel()
		bot, own := persisttest.Bot(t, e.h.Store, e.owner.User, e.ws.ID, nil)
		second := persisttest.BotToken(t, e.h.Store, e.owner.User, e.ws.ID, bot.ID)
		other := persisttest.Workspace(t, e.h.Store, e.owner.User.ID)
		persisttest.Member(t, e.h.Store, other.ID, bot.ID, persist.RoleBot)
		elsewhere := persisttest.BotToken(t, e.h.Store, e.owner.User, other.ID, bot.ID)
		inst, token := e.install(t, map[string]any{"bot_user_id": bot.ID})
		attach(t, inst)
		counts := revoke(t, inst, map[string]any{"revoke_slash_commands": false, "revoke_event_subscriptions": false,
			"revoke_bot_tokens": true})
		require.Equal(t, map[string]any{"slash_commands": 0.0, "event_subscriptions": 0.0, "bot_tokens": 3.0}, counts)
		for _, tok := range []string{token, own.Token, second.Token} {
			e.h.Get(t, "/api/workspaces/"+e.ws.ID, tok).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		}
		e.h.Get(t, "/api/workspaces/"+other.ID, elsewhere.Token).RequireStatus(t, http.StatusOK)
	})
	t.Run("DeleteBotRetiresIt", func(t *testing.T) {
		t.Parallel()
		bot, first := persisttest.Bot(t, e.h.Store, e.owner.User, e.ws.ID, &persisttest.BotOpts{Handle: persisttest.Ptr("retiree")})
		inst, token := e.install(t, map[string]any{"bot_user_id": bot.ID})
		attach(t, inst)
		r := e.h.Post(t, "/api/app-installations/"+inst+"/revoke", e.owner.Token, map[string]any{"delete_bot": true})
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, map[string]any{"slash_commands": 2.0, "event_subscriptions": 1.0, "bot_tokens": 2.0}, e.obj(t, r, "revoked"))
		deleted := e.obj(t, r, "deleted_bot")
		require.Equal(t, bot.ID, deleted["id"])
		require.Equal(t, "retiree", deleted["former_handle"])
		for _, tok := range []string{first.Token, token} {
			e.h.Get(t, "/api/workspaces/"+e.ws.ID, tok).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		}
	})
	t.Run("OnlyHumanManagers", func(t *testing.T) {
		t.Parallel()
		inst, token := e.install(t, nil)
		member := e.join(t, persist.RoleMember)
		e.h.Post(t, "/api/app-installations/"+inst+"/revoke", member.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.h.Post(t, "/api/app-installations/"+inst+"/revoke", token, nil).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
		e.h.Post(t, "/api/app-installations/app_01j00000000000000000000000/revoke", e.owner.Token, nil).
			RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	})
}

// TestAppInstallationRevokeCutsTheBotsConnections: revoke_bot_tokens ends every token of the bot
// in the workspace as token revocation does, the sockets (1008) and NATS connections of its own
// tokens included, not only the installation's.
func TestAppInstallationRevokeCutsTheBotsConnections(t *testing.T) {
	t.Parallel()
	// No periodic recheck of NATS connections runs within the test: the announcement does it.
	b := setupRealtime(t, servertest.WithRealtime(func(c *realtime.Config) { c.RevalidateInterval = time.Nanosecond }),
		servertest.WithBotAccess(func(c *streams.BotAccessConfig) { c.RevalidateInterval = time.Hour }))
	bot, own := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
	r := b.h.Post(t, "/api/workspaces/"+b.ws.ID+"/app-installations", b.owner.Token, map[string]any{"app_slug": "acme",
		"bot_user_id": bot.ID})
	r.RequireStatus(t, http.StatusCreated)
	inst := r.JSON(t)["app_installation"].(map[string]any)["id"].(string)

	s := b.dial(t, own.Token, "2")
	nb, err := connectBot(t, b.h, own, false)
	require.NoError(t, err)
	nb.Replay(t, nil)

	r = b.h.Post(t, "/api/app-installations/"+inst+"/revoke", b.owner.Token, map[string]any{"revoke_bot_tokens": true})
	r.RequireStatus(t, http.StatusOK)
	require.Equal(t, 2.0, r.JSON(t)["revoked"].(map[string]any)["bot_tokens"])
	nb.ExpectClosed(t)
	b.add(t, persist.EventInput{ChannelID: b.general})
	require.Equal(t, realtime.CloseRevoked, s.ExpectClose(t))
	b.h.Get(t, "/api/workspaces/"+b.ws.ID, own.Token).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
}
