package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func (e *intEnv) connect(t *testing.T, userID, accountID string) string {
	t.Helper()
	r := e.h.Post(t, e.wsPath("/connected-accounts"), e.owner.Token, map[string]any{"user_id": userID, "provider": "github",
		"provider_account_id": accountID, "display_name": "Octo", "scopes": []string{"repo"}, "metadata": map[string]any{"login": "octo"}})
	r.RequireStatus(t, http.StatusCreated)
	return e.obj(t, r, "connected_account")["id"].(string)
}

func (e *intEnv) audit(t *testing.T, query string) []map[string]any {
	t.Helper()
	r := e.h.Get(t, e.wsPath("/audit-log"+query), e.owner.Token)
	r.RequireStatus(t, http.StatusOK)
	var out []map[string]any
	for _, x := range r.JSON(t)["audit_log_entries"].([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

func TestConnectedAccounts(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t)
	member := e.join(t, persist.RoleMember)
	other := e.join(t, persist.RoleMember)

	id := e.connect(t, member.User.ID, "42")
	r := e.h.Get(t, e.wsPath("/connected-accounts"), other.Token)
	r.RequireStatus(t, http.StatusOK)
	list := r.JSON(t)["connected_accounts"].([]any)
	require.Len(t, list, 1)
	acc := list[0].(map[string]any)
	require.Equal(t, member.User.ID, acc["user_id"])
	require.Equal(t, []any{"repo"}, acc["scopes"])
	require.Equal(t, map[string]any{"login": "octo"}, acc["metadata"])

	t.Run("CreateNeedsAMemberAndAManager", func(t *testing.T) {
		t.Parallel()
		outsider := e.h.NewUser(t)
		e.h.Post(t, e.wsPath("/connected-accounts"), e.owner.Token, map[string]any{"user_id": outsider.User.ID,
			"provider": "github", "provider_account_id": "1"}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		e.h.Post(t, e.wsPath("/connected-accounts"), e.owner.Token, map[string]any{"user_id": member.User.ID,
			"provider_account_id": "1"}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		e.h.Post(t, e.wsPath("/connected-accounts"), other.Token, map[string]any{"user_id": other.User.ID,
			"provider": "github", "provider_account_id": "1"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})
	t.Run("RevokeByTheBoundUserOrAManager", func(t *testing.T) {
		t.Parallel()
		mine := e.connect(t, other.User.ID, "7")
		theirs := e.connect(t, member.User.ID, "8")
		e.h.Post(t, "/api/connected-accounts/"+theirs+"/revoke", other.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		r := e.h.Post(t, "/api/connected-accounts/"+mine+"/revoke", other.Token, nil)
		r.RequireStatus(t, http.StatusOK)
		require.NotNil(t, e.obj(t, r, "connected_account")["revoked_at"])
		e.h.Post(t, "/api/connected-accounts/"+theirs+"/revoke", e.join(t, persist.RoleModerator).Token, nil).RequireStatus(t, http.StatusOK)
	})

	// The audit log: one entry on create and on revoke, newest first, paged.
	e.h.Post(t, "/api/connected-accounts/"+id+"/revoke", e.owner.Token, nil).RequireStatus(t, http.StatusOK)
	e.h.Post(t, "/api/connected-accounts/"+id+"/revoke", e.owner.Token, nil).RequireStatus(t, http.StatusOK) // no second entry
	var forID []map[string]any
	for _, entry := range e.audit(t, "?limit=200") {
		if entry["target_id"] == id {
			forID = append(forID, entry)
		}
	}
	require.Len(t, forID, 2)
	require.Equal(t, "connected_account.revoked", forID[0]["action"])
	require.Equal(t, "connected_account.created", forID[1]["action"])
	require.Equal(t, e.owner.User.ID, forID[0]["actor_user_id"])
	require.Equal(t, "connected_account", forID[0]["target_type"])
	require.Equal(t, member.User.ID, forID[0]["metadata"].(map[string]any)["user_id"])

	first := e.h.Get(t, e.wsPath("/audit-log?limit=1"), e.owner.Token).JSON(t)
	require.Len(t, first["audit_log_entries"], 1)
	next := first["next_cursor"].(string)
	second := e.h.Get(t, e.wsPath("/audit-log?limit=1&before="+next), e.owner.Token).JSON(t)
	require.NotEqual(t, next, second["audit_log_entries"].([]any)[0].(map[string]any)["id"])
	e.h.Get(t, e.wsPath("/audit-log?before=aud_nope"), e.owner.Token).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	e.h.Get(t, e.wsPath("/audit-log"), other.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
}

// TestBotRemovalRevokesIntegrations: removing a bot from a workspace, or deleting it, revokes its
// installations, their slash commands and subscriptions, and its account bindings in the same
// transaction.
func TestBotRemovalRevokesIntegrations(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t)
	setup := func(t *testing.T) (persist.User, string) {
		bot, _ := persisttest.Bot(t, e.h.Store, e.owner.User, e.ws.ID, nil)
		inst, _ := e.install(t, map[string]any{"bot_user_id": bot.ID})
		e.register(t, inst, "/c"+inst[len(inst)-8:], "https://hooks.example.com/c")
		e.subscribe(t, inst, "https://hooks.example.com/s", "*")
		return bot, e.connect(t, bot.ID, "bot-"+bot.ID)
	}
	gone := func(t *testing.T, bot persist.User, account string) {
		t.Helper()
		for key, path := range map[string]string{"app_installations": "/app-installations", "slash_commands": "/slash-commands",
			"event_subscriptions": "/event-subscriptions", "connected_accounts": "/connected-accounts"} {
			for _, item := range e.h.Get(t, e.wsPath(path), e.owner.Token).JSON(t)[key].([]any) {
				m := item.(map[string]any)
				require.NotEqual(t, bot.ID, m["bot_user_id"], key)
				require.NotEqual(t, bot.ID, m["user_id"], key)
			}
		}
		var revoked bool
		for _, entry := range e.audit(t, "?limit=200") {
			if entry["target_id"] == account && entry["action"] == "connected_account.revoked" {
				revoked = true
				require.Equal(t, "bot_removed", entry["metadata"].(map[string]any)["reason"])
			}
		}
		require.True(t, revoked)
	}

	t.Run("MembershipRemoval", func(t *testing.T) {
		t.Parallel()
		bot, account := setup(t)
		e.do(t, http.MethodDelete, e.wsPath("/bots/"+bot.ID+"/membership"), e.owner.Token, nil).RequireStatus(t, http.StatusNoContent)
		gone(t, bot, account)
	})
	t.Run("Deletion", func(t *testing.T) {
		t.Parallel()
		bot, account := setup(t)
		e.do(t, http.MethodDelete, "/api/bots/"+bot.ID, e.owner.Token, nil).RequireStatus(t, http.StatusOK)
		gone(t, bot, account)
	})
	t.Run("OrphanDeletionNeedsTheIntegrationWorkspaces", func(t *testing.T) {
		t.Parallel()
		// A service bot of another workspace, bound here only through a connected account: once
		// it is out of every workspace, deleting it still needs a manager of this one.
		boss := e.h.NewUser(t)
		other := persisttest.Workspace(t, e.h.Store, boss.User.ID)
		bot, _ := persisttest.Bot(t, e.h.Store, boss.User, other.ID, nil)
		persisttest.Member(t, e.h.Store, e.ws.ID, bot.ID, persist.RoleBot)
		e.connect(t, bot.ID, "orphan")
		ctx := context.Background()
		for _, leave := range []struct {
			actor persist.User
			ws    string
		}{{e.owner.User, e.ws.ID}, {boss.User, other.ID}} {
			require.NoError(t, e.h.Store.WithTx(ctx, func(tx *persist.Tx) error {
				return tx.BotMembershipRemove(ctx, persist.ActorFor(leave.actor), leave.ws, bot.ID)
			}))
		}
		e.do(t, http.MethodDelete, "/api/bots/"+bot.ID, boss.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		persisttest.Member(t, e.h.Store, e.ws.ID, boss.User.ID, persist.RoleModerator)
		e.do(t, http.MethodDelete, "/api/bots/"+bot.ID, boss.Token, nil).RequireStatus(t, http.StatusOK)
	})
}

func TestMattermostHook(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t)
	general := persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")
	r := e.h.Post(t, "/api/hooks/mattermost/"+general.ID, e.owner.Token, map[string]any{"text": "**deployed** v2",
		"username": "ci", "icon_url": "https://example.com/i.png", "channel": "elsewhere", "attachments": []any{}})
	r.RequireStatus(t, http.StatusCreated)
	msg := e.obj(t, r, "message")
	require.Equal(t, "**deployed** v2", msg["body"])
	require.Equal(t, "markdown", msg["body_format"])
	require.Equal(t, e.owner.User.ID, msg["author_id"])
	require.Equal(t, general.ID, msg["channel_id"])
	ev := e.logged(t, r)
	require.Equal(t, "message.created", ev.Type)
	require.Equal(t, general.ID, ev.ChannelID)

	_, token := persisttest.Bot(t, e.h.Store, e.owner.User, e.ws.ID, nil)
	r = e.h.Post(t, "/api/hooks/mattermost/"+general.ID, token.Token, map[string]any{"text": "from a bot"})
	r.RequireStatus(t, http.StatusCreated)
	e.h.Post(t, "/api/hooks/mattermost/"+general.ID, e.owner.Token, map[string]any{"text": " "}).
		RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	e.h.Post(t, "/api/hooks/mattermost/"+general.ID, e.h.NewUser(t).Token, map[string]any{"text": "hi"}).
		RequireError(t, http.StatusForbidden, persist.CodeForbidden)
}
