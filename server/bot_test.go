package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestBotCreate(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)

	t.Run("ServiceBotByOwnerOrModerator", func(t *testing.T) {
		t.Parallel()
		for _, as := range []servertest.Actor{w.owner, w.moderator} {
			b := w.createBot(t, as, map[string]any{"display_name": "Deployer", "handle": "@Deploy-" + as.User.ID[len(as.User.ID)-4:]}, http.StatusCreated)
			require.Equal(t, persist.KindBot, b.Bot.Kind)
			require.Empty(t, b.Bot.OwnerUserID, "service bots have no owner")
			require.True(t, strings.HasPrefix(b.Bot.Handle, "deploy-"), "handles are normalized")
			require.NotNil(t, b.BotToken)
			require.True(t, strings.HasPrefix(b.BotToken.Token, "ccb_"))
			require.Equal(t, w.ws.ID, b.BotToken.WorkspaceID)
			require.Equal(t, b.Bot.ID, b.BotToken.BotUserID)
			require.Equal(t, as.User.ID, b.BotToken.CreatedBy)
			require.Equal(t, persist.DefaultTokenName, b.BotToken.Name)
			want, err := persist.ExpandScopes([]string{"bot:write"})
			require.NoError(t, err)
			require.Equal(t, want, b.BotToken.Scopes, "no scopes means bot:write, expanded")
		}
	})
	t.Run("ServiceBotByMemberOrGuestIs403", func(t *testing.T) {
		t.Parallel()
		for _, as := range []servertest.Actor{w.member, w.guest} {
			w.h.Post(t, w.botsPath(), as.Token, map[string]any{"display_name": "Nope"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		}
	})
	t.Run("UserBotByItsOwner", func(t *testing.T) {
		t.Parallel()
		b := w.createBot(t, w.member, map[string]any{"display_name": "Mine", "owner_user_id": w.member.User.ID}, http.StatusCreated)
		require.Equal(t, persist.KindBot, b.Bot.Kind)
		require.Equal(t, w.member.User.ID, b.Bot.OwnerUserID)
		require.Equal(t, w.member.User.ID, b.BotToken.OwnerUserID, "the token records the owner at issue")
	})
	t.Run("UserBotForSomeoneElseIs403", func(t *testing.T) {
		t.Parallel()
		r := w.h.Post(t, w.botsPath(), w.owner.Token, map[string]any{"display_name": "Theirs", "owner_user_id": w.member.User.ID})
		r.RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})
	t.Run("GuestCannotCreateUserBots", func(t *testing.T) {
		t.Parallel()
		r := w.h.Post(t, w.botsPath(), w.guest.Token, map[string]any{"display_name": "Guestbot", "owner_user_id": w.guest.User.ID})
		r.RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})
	t.Run("NotWhileTimedOutOrBlocked", func(t *testing.T) {
		t.Parallel()
		v := newBotWorld(t)
		moderate := func(userID string, body map[string]any) {
			v.h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/workspaces/" + v.ws.ID + "/moderation/members/" + userID,
				Token: v.owner.Token, Body: body}).RequireStatus(t, http.StatusOK)
		}
		moderate(v.member.User.ID, map[string]any{"blocked": true})
		moderate(v.moderator.User.ID, map[string]any{"timeout_minutes": 30})
		r := v.h.Post(t, v.botsPath(), v.member.Token, map[string]any{"display_name": "Mine", "owner_user_id": v.member.User.ID})
		r.RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		v.h.Post(t, v.botsPath(), v.moderator.Token, map[string]any{"display_name": "Svc"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})
	t.Run("ABotNeverOwnsABot", func(t *testing.T) {
		t.Parallel()
		_, token := w.serviceBot(t, "bot:admin")
		w.h.Post(t, w.botsPath(), token, map[string]any{"display_name": "Child"}).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
		parent, _ := w.serviceBot(t)
		r := w.h.Post(t, w.botsPath(), w.owner.Token, map[string]any{"display_name": "Child", "owner_user_id": parent.ID})
		r.RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})
	t.Run("OutsiderIs403", func(t *testing.T) {
		t.Parallel()
		w.h.Post(t, w.botsPath(), w.outsider.Token, map[string]any{"display_name": "X"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		w.h.Post(t, "/api/workspaces/wsp_unknown/bots", w.owner.Token, map[string]any{"display_name": "X"}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	})
	t.Run("WithoutInitialToken", func(t *testing.T) {
		t.Parallel()
		r := w.h.Post(t, w.botsPath(), w.owner.Token, map[string]any{"display_name": "Tokenless", "initial_token": false})
		r.RequireStatus(t, http.StatusCreated)
		require.NotContains(t, r.JSON(t), "bot_token")
		var b createdBot
		r.Decode(t, &b)
		require.Empty(t, w.tokens(t, w.owner, b.Bot.ID))
	})
	t.Run("ScopesExpandedAtIssue", func(t *testing.T) {
		t.Parallel()
		b := w.createBot(t, w.owner, map[string]any{"display_name": "Admin", "scopes": []string{"bot:admin"}}, http.StatusCreated)
		require.NotContains(t, b.BotToken.Scopes, persist.ScopeAgentActivityWrite, "no bundle holds agent_activity:write")
		require.Contains(t, b.BotToken.Scopes, persist.ScopeChannelsWrite)
		b = w.createBot(t, w.owner, map[string]any{"display_name": "Agent", "scopes": []string{"bot:read", "agent_activity:write"}}, http.StatusCreated)
		require.Contains(t, b.BotToken.Scopes, persist.ScopeAgentActivityWrite)
		require.NotContains(t, b.BotToken.Scopes, "bot:read", "bundles never reach the token")
	})
	t.Run("InvalidFieldsCreateNothing", func(t *testing.T) {
		t.Parallel()
		v := newBotWorld(t)
		for _, body := range []map[string]any{
			{"display_name": ""},
			{"display_name": "Bad", "handle": "x"},
			{"display_name": "Bad", "avatar_url": "ftp://x/y.png"},
			{"display_name": "Bad", "scopes": []string{"bot:everything"}},
			{"display_name": "Bad", "setup_nonce": "short"},
			{"display_name": "Bad", "token_name": strings.Repeat("n", 81)},
		} {
			v.h.Post(t, v.botsPath(), v.owner.Token, body).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
		v.h.Post(t, v.botsPath(), v.owner.Token, `{"display_name": 5}`).RequireError(t, http.StatusBadRequest, persist.CodeInvalidJSON)
		r := v.h.Get(t, v.botsPath(), v.owner.Token)
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, []any{}, r.JSON(t)["bots"])
	})
	t.Run("TakenHandleIs409", func(t *testing.T) {
		t.Parallel()
		w.createBot(t, w.owner, map[string]any{"display_name": "One", "handle": "samebot"}, http.StatusCreated)
		w.h.Post(t, w.botsPath(), w.owner.Token, map[string]any{"display_name": "Two", "handle": "SameBot"}).RequireError(t, http.StatusConflict, persist.CodeConflict)
	})
}

func TestBotCreateSetupNonce(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)

	t.Run("TokenlessRetriesReturnTheSameBot", func(t *testing.T) {
		t.Parallel()
		body := map[string]any{"display_name": "Installer", "initial_token": false, "setup_nonce": "tokenless-nonce-0001"}
		first := w.createBot(t, w.owner, body, http.StatusCreated)
		again := w.createBot(t, w.owner, body, http.StatusOK)
		require.Equal(t, first.Bot.ID, again.Bot.ID)
		require.Nil(t, again.BotToken)
		require.Empty(t, w.tokens(t, w.owner, first.Bot.ID))
	})
	t.Run("TokenRetriesRotateTheSameRow", func(t *testing.T) {
		t.Parallel()
		body := map[string]any{"display_name": "Installer", "setup_nonce": "token-mode-nonce-0001"}
		first := w.createBot(t, w.owner, body, http.StatusCreated)
		again := w.createBot(t, w.owner, body, http.StatusOK)
		require.Equal(t, first.Bot.ID, again.Bot.ID)
		require.Equal(t, first.BotToken.ID, again.BotToken.ID, "the token row is reused")
		require.NotEqual(t, first.BotToken.Token, again.BotToken.Token, "with a fresh secret")
		w.h.Get(t, "/api/workspaces/"+w.ws.ID+"/bot-commands", first.BotToken.Token).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		w.h.Get(t, "/api/workspaces/"+w.ws.ID+"/bot-commands", again.BotToken.Token).RequireStatus(t, http.StatusOK)
		require.Len(t, w.tokens(t, w.owner, first.Bot.ID), 1)
	})
	t.Run("ARevokedTokenIsNotRevived", func(t *testing.T) {
		t.Parallel()
		body := map[string]any{"display_name": "Installer", "setup_nonce": "revoked-nonce-00001"}
		first := w.createBot(t, w.owner, body, http.StatusCreated)
		w.h.Post(t, "/api/bot-tokens/"+first.BotToken.ID+"/revoke", w.owner.Token, nil).RequireStatus(t, http.StatusOK)
		again := w.createBot(t, w.owner, body, http.StatusOK)
		require.NotEqual(t, first.BotToken.ID, again.BotToken.ID)
		w.h.Get(t, "/api/workspaces/"+w.ws.ID+"/bot-commands", again.BotToken.Token).RequireStatus(t, http.StatusOK)
		w.h.Get(t, "/api/workspaces/"+w.ws.ID+"/bot-commands", first.BotToken.Token).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})
	t.Run("NoncesArePrivateToTheirCreator", func(t *testing.T) {
		t.Parallel()
		body := map[string]any{"display_name": "Installer", "setup_nonce": "shared-looking-nonce"}
		mine := w.createBot(t, w.owner, body, http.StatusCreated)
		theirs := w.createBot(t, w.moderator, body, http.StatusCreated)
		require.NotEqual(t, mine.Bot.ID, theirs.Bot.ID)
	})
	t.Run("DeletedBotsNonceIsAConflict", func(t *testing.T) {
		t.Parallel()
		body := map[string]any{"display_name": "Installer", "setup_nonce": "deleted-bot-nonce-01"}
		first := w.createBot(t, w.owner, body, http.StatusCreated)
		w.h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/bots/" + first.Bot.ID, Token: w.owner.Token}).RequireStatus(t, http.StatusOK)
		w.h.Post(t, w.botsPath(), w.owner.Token, body).RequireError(t, http.StatusConflict, persist.CodeConflict)
	})
}

func TestBotPayloadsTellKindsApart(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)
	service := w.createBot(t, w.owner, map[string]any{"display_name": "Svc", "scopes": []string{"profile:read"}}, http.StatusCreated)
	user := w.createBot(t, w.member, map[string]any{"display_name": "Usr", "owner_user_id": w.member.User.ID, "scopes": []string{"profile:read"}}, http.StatusCreated)

	me := func(token string) map[string]any {
		return w.h.Get(t, "/api/me", token).JSON(t)["user"].(map[string]any)
	}
	s, u, h := me(service.BotToken.Token), me(user.BotToken.Token), me(w.member.Token)
	require.Equal(t, "bot", s["kind"])
	require.NotContains(t, s, "owner_user_id", "a service bot has no owner")
	require.Equal(t, "bot", u["kind"])
	require.Equal(t, w.member.User.ID, u["owner_user_id"], "a user bot names its owner")
	require.Equal(t, "human", h["kind"])
	require.NotContains(t, h, "owner_user_id")
}

func TestMyBots(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)
	other := persisttest.Workspace(t, w.h.Store, w.member.User.ID)
	mine := w.createBot(t, w.member, map[string]any{"display_name": "Mine", "handle": "mine", "owner_user_id": w.member.User.ID}, http.StatusCreated)
	persisttest.Member(t, w.h.Store, other.ID, mine.Bot.ID, persist.RoleBot)
	persisttest.BotToken(t, w.h.Store, w.member.User, other.ID, mine.Bot.ID)
	persisttest.BotToken(t, w.h.Store, w.member.User, other.ID, mine.Bot.ID)
	w.createBot(t, w.owner, map[string]any{"display_name": "Not mine"}, http.StatusCreated)
	w.createBot(t, w.moderator, map[string]any{"display_name": "Theirs", "owner_user_id": w.moderator.User.ID}, http.StatusCreated)

	r := w.h.Get(t, "/api/me/bots", w.member.Token)
	r.RequireStatus(t, http.StatusOK)
	var out struct {
		Bots []persist.OwnedBot `json:"bots"`
	}
	r.Decode(t, &out)
	require.Len(t, out.Bots, 2, "one entry per workspace of each owned bot, nothing else")
	counts := map[string]int{}
	for _, e := range out.Bots {
		require.Equal(t, mine.Bot.ID, e.Bot.ID)
		require.Equal(t, w.member.User.ID, e.Bot.OwnerUserID)
		counts[e.Workspace.ID] = e.ActiveTokenCount
	}
	require.Equal(t, map[string]int{w.ws.ID: 1, other.ID: 2}, counts)

	w.h.Get(t, "/api/me/bots", mine.BotToken.Token).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
}

func TestBotList(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)
	b := w.createBot(t, w.owner, map[string]any{"display_name": "Listed", "handle": "listed"}, http.StatusCreated)
	extra := persisttest.BotToken(t, w.h.Store, w.owner.User, w.ws.ID, b.Bot.ID, "bot:read")
	w.h.Post(t, "/api/bot-tokens/"+b.BotToken.ID+"/revoke", w.owner.Token, nil).RequireStatus(t, http.StatusOK)

	for _, as := range []servertest.Actor{w.owner, w.moderator, w.member} {
		r := w.h.Get(t, w.botsPath(), as.Token)
		r.RequireStatus(t, http.StatusOK)
		require.NotContains(t, string(r.Body), b.BotToken.Token)
		require.NotContains(t, string(r.Body), extra.Token)
		require.NotContains(t, string(r.Body), `"token"`, "listings are redacted")
		var out struct {
			Bots []persist.BotWithTokens `json:"bots"`
		}
		r.Decode(t, &out)
		require.Len(t, out.Bots, 1)
		require.Equal(t, "listed", out.Bots[0].Bot.Handle)
		require.Len(t, out.Bots[0].Tokens, 2)
		require.Equal(t, extra.ID, out.Bots[0].Tokens[0].ID, "newest first")
		require.NotNil(t, out.Bots[0].Tokens[1].RevokedAt, "revoked tokens stay listed")
	}
	w.h.Get(t, w.botsPath(), w.guest.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	w.h.Get(t, w.botsPath(), w.outsider.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	w.h.Get(t, w.botsPath(), extra.Token).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
}

func TestBotMembershipRemoval(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)
	other := persisttest.Workspace(t, w.h.Store, w.owner.User.ID)
	remove := func(as servertest.Actor, botID string) *servertest.Response {
		return w.h.Do(t, servertest.Request{Method: http.MethodDelete, Path: w.botsPath() + "/" + botID + "/membership", Token: as.Token})
	}

	b := w.createBot(t, w.owner, map[string]any{"display_name": "Leaving", "scopes": []string{"bot:admin"}}, http.StatusCreated)
	persisttest.Member(t, w.h.Store, other.ID, b.Bot.ID, persist.RoleBot)
	elsewhere := persisttest.BotToken(t, w.h.Store, w.owner.User, other.ID, b.Bot.ID, "bot:admin")
	putMenu(t, w.h, b.BotToken.Token, []map[string]any{{"command": "/stay", "description": "Stays?"}}).RequireStatus(t, http.StatusOK)
	code := mintSetupCode(t, w, w.owner, b.Bot.ID, map[string]any{"name": "pending"})

	remove(w.member, b.Bot.ID).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	remove(w.guest, b.Bot.ID).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	remove(w.outsider, b.Bot.ID).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	remove(w.moderator, w.member.User.ID).RequireError(t, http.StatusNotFound, persist.CodeNotFound)

	r := remove(w.moderator, b.Bot.ID)
	r.RequireStatus(t, http.StatusNoContent)
	require.Empty(t, r.Body)
	w.h.Get(t, "/api/workspaces/"+w.ws.ID+"/bot-commands", b.BotToken.Token).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	require.Empty(t, listCommands(t, w.h, w.ws.ID, w.owner.Token), "the menu went with the membership")
	claim(t, w.h, code).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	remove(w.moderator, b.Bot.ID).RequireError(t, http.StatusNotFound, persist.CodeNotFound)

	// The bot user stays, and so does everything it has in other workspaces.
	w.h.Get(t, "/api/workspaces/"+other.ID+"/bot-commands", elsewhere.Token).RequireStatus(t, http.StatusOK)
	ctx := context.Background()
	u, err := persist.WithTxV(ctx, w.h.Store, func(tx *persist.Tx) (persist.User, error) { return tx.UserGet(ctx, b.Bot.ID) })
	require.NoError(t, err)
	require.Nil(t, u.DeletedAt)
}

func TestBotDelete(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)
	del := func(as servertest.Actor, botID string) *servertest.Response {
		return w.h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/bots/" + botID, Token: as.Token})
	}

	t.Run("UserBotByItsOwnerOnly", func(t *testing.T) {
		t.Parallel()
		b := w.createBot(t, w.member, map[string]any{"display_name": "Helper", "handle": "helper", "owner_user_id": w.member.User.ID}, http.StatusCreated)
		del(w.owner, b.Bot.ID).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		r := del(w.member, b.Bot.ID)
		r.RequireStatus(t, http.StatusOK)
		var out struct {
			DeletedBot persist.DeletedBot `json:"deleted_bot"`
		}
		r.Decode(t, &out)
		require.Equal(t, b.Bot.ID, out.DeletedBot.ID)
		require.Equal(t, "Helper", out.DeletedBot.DisplayName)
		require.Equal(t, "helper", out.DeletedBot.FormerHandle)
		require.False(t, out.DeletedBot.DeletedAt.IsZero())
		del(w.member, b.Bot.ID).RequireError(t, http.StatusNotFound, persist.CodeNotFound)

		// The handle is free for a new bot with a new id and no deleted marker; the old
		// identity still renders, as a tombstone.
		again := w.createBot(t, w.member, map[string]any{"display_name": "Helper 2", "handle": "helper", "owner_user_id": w.member.User.ID}, http.StatusCreated)
		require.NotEqual(t, b.Bot.ID, again.Bot.ID)
		require.Nil(t, again.Bot.DeletedAt)
		require.Empty(t, again.Bot.FormerHandle)
		ctx := context.Background()
		old, err := persist.WithTxV(ctx, w.h.Store, func(tx *persist.Tx) (persist.User, error) { return tx.UserGet(ctx, b.Bot.ID) })
		require.NoError(t, err)
		pub := old.Public()
		require.Empty(t, pub.Handle)
		require.Equal(t, "helper", pub.FormerHandle)
		require.NotNil(t, pub.DeletedAt)
	})
	t.Run("EverythingIsRevokedAtOnce", func(t *testing.T) {
		t.Parallel()
		b := w.createBot(t, w.owner, map[string]any{"display_name": "Doomed", "scopes": []string{"bot:admin"}}, http.StatusCreated)
		second := persisttest.BotToken(t, w.h.Store, w.owner.User, w.ws.ID, b.Bot.ID, "bot:read")
		putMenu(t, w.h, b.BotToken.Token, []map[string]any{{"command": "doomed", "description": "Gone soon"}}).RequireStatus(t, http.StatusOK)
		code := mintSetupCode(t, w, w.owner, b.Bot.ID, nil)
		del(w.owner, b.Bot.ID).RequireStatus(t, http.StatusOK)
		for _, token := range []string{b.BotToken.Token, second.Token} {
			w.h.Get(t, "/api/workspaces/"+w.ws.ID+"/bot-commands", token).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		}
		for _, e := range listCommands(t, w.h, w.ws.ID, w.owner.Token) {
			require.NotEqual(t, b.Bot.ID, e.Bot.ID)
		}
		claim(t, w.h, code).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		r := w.h.Get(t, w.botsPath(), w.owner.Token)
		require.NotContains(t, string(r.Body), b.Bot.ID, "no longer a member")
	})
	t.Run("ServiceBotNeedsAManagerOfEveryActiveWorkspace", func(t *testing.T) {
		t.Parallel()
		v := newBotWorld(t)
		other := persisttest.Workspace(t, v.h.Store, v.outsider.User.ID)
		b := v.createBot(t, v.owner, map[string]any{"display_name": "Shared"}, http.StatusCreated)
		persisttest.Member(t, v.h.Store, other.ID, b.Bot.ID, persist.RoleBot)
		vdel := func(as servertest.Actor) *servertest.Response {
			return v.h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/bots/" + b.Bot.ID, Token: as.Token})
		}
		vdel(v.owner).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		vdel(v.outsider).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		vdel(v.member).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		persisttest.Member(t, v.h.Store, other.ID, v.moderator.User.ID, persist.RoleModerator)
		vdel(v.moderator).RequireStatus(t, http.StatusOK)
	})
	t.Run("OrphanedServiceBotIsJudgedByItsHistory", func(t *testing.T) {
		t.Parallel()
		v := newBotWorld(t)
		elsewhere := persisttest.Workspace(t, v.h.Store, v.outsider.User.ID)
		b := v.createBot(t, v.owner, map[string]any{"display_name": "Orphan"}, http.StatusCreated)
		v.h.Do(t, servertest.Request{Method: http.MethodDelete, Path: v.botsPath() + "/" + b.Bot.ID + "/membership", Token: v.owner.Token}).RequireStatus(t, http.StatusNoContent)
		persisttest.Member(t, v.h.Store, elsewhere.ID, v.member.User.ID, persist.RoleModerator)
		vdel := func(as servertest.Actor) *servertest.Response {
			return v.h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/bots/" + b.Bot.ID, Token: as.Token})
		}
		vdel(v.outsider).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		vdel(v.member).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		vdel(v.moderator).RequireStatus(t, http.StatusOK)
	})
	t.Run("OnlyLiveBots", func(t *testing.T) {
		t.Parallel()
		del(w.owner, w.member.User.ID).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		del(w.owner, "usr_unknown").RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		b := w.createBot(t, w.owner, map[string]any{"display_name": "Self", "scopes": []string{"bot:admin"}}, http.StatusCreated)
		w.h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/bots/" + b.Bot.ID, Token: b.BotToken.Token}).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
	})
}
