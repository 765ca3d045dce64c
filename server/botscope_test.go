package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestBotScopesEndToEnd drives the scope table of §Bot scopes with real bot tokens against the
// message, thread and DM routes: each scope opens exactly its routes, and agent_commentary and
// agent_tool messages need a bot token naming agent_activity:write.
func TestBotScopesEndToEnd(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)
	general := persisttest.Channel(t, w.h.Store, persist.ActorFor(w.owner.User), w.ws.ID, "general")
	channelMessages := "/api/channels/" + general.ID + "/messages"

	t.Run("ReadAndWriteScopes", func(t *testing.T) {
		t.Parallel()
		_, reader := w.serviceBot(t, "bot:read")
		_, writer := w.serviceBot(t, "bot:write")
		w.h.Get(t, channelMessages, reader).RequireStatus(t, http.StatusOK)
		w.h.Post(t, channelMessages, reader, map[string]any{"body": "hi"}).RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
		r := w.h.Post(t, channelMessages, writer, map[string]any{"body": "hello from a bot"})
		r.RequireStatus(t, http.StatusCreated)
		msg := r.JSON(t)["message"].(map[string]any)
		require.Equal(t, "bot", msg["author"].(map[string]any)["kind"], "messages tell bots apart")
		replies := "/api/messages/" + msg["id"].(string) + "/thread/replies"
		w.h.Post(t, replies, reader, map[string]any{"body": "re"}).RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
		w.h.Post(t, replies, writer, map[string]any{"body": "re"}).RequireStatus(t, http.StatusCreated)
		w.h.Get(t, "/api/messages/"+msg["id"].(string)+"/thread", reader).RequireStatus(t, http.StatusOK)
	})
	// EveryBundleCallsMe: runtimes ask GET /api/me first, so each bundle includes profile:read
	// (CONTRACT.md §Compatibility); a token without it is still refused.
	t.Run("EveryBundleCallsMe", func(t *testing.T) {
		t.Parallel()
		for _, bundle := range []string{"bot:read", "bot:write", "bot:admin"} {
			bot, token := w.serviceBot(t, bundle)
			require.Equal(t, bot.ID, meID(t, w.h.Get(t, "/api/me", token)), bundle)
		}
		_, noProfile := w.serviceBot(t, "messages:read")
		w.h.Get(t, "/api/me", noProfile).RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
	})
	t.Run("AgentActivityOnlyWithItsScope", func(t *testing.T) {
		t.Parallel()
		_, admin := w.serviceBot(t, "bot:admin")
		_, agent := w.serviceBot(t, "bot:write", "agent_activity:write")
		for _, kind := range []string{"agent_commentary", "agent_tool"} {
			body := map[string]any{"body": "thinking…", "kind": kind}
			w.h.Post(t, channelMessages, w.owner.Token, body).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
			w.h.Post(t, channelMessages, admin, body).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
			r := w.h.Post(t, channelMessages, agent, body)
			r.RequireStatus(t, http.StatusCreated)
			require.Equal(t, kind, r.JSON(t)["message"].(map[string]any)["kind"])
		}

		// In a direct conversation too, which the bot must belong to.
		r := w.h.Post(t, "/api/dms", agent, map[string]any{"workspace_id": w.ws.ID, "member_ids": []string{w.member.User.ID}})
		r.RequireStatus(t, http.StatusCreated)
		dm := r.JSON(t)["conversation"].(map[string]any)["id"].(string)
		w.h.Post(t, "/api/dms/"+dm+"/messages", agent, map[string]any{"body": "tool run", "kind": "agent_tool"}).RequireStatus(t, http.StatusCreated)
		w.h.Post(t, "/api/dms/"+dm+"/messages", w.member.Token, map[string]any{"body": "tool run", "kind": "agent_tool"}).
			RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})
	t.Run("DirectConversationsNeedTheDMScopes", func(t *testing.T) {
		t.Parallel()
		_, noDMs := w.serviceBot(t, "messages:read", "messages:write", "channels:read")
		w.h.Get(t, "/api/dms?workspace_id="+w.ws.ID, noDMs).RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
		w.h.Post(t, "/api/dms", noDMs, map[string]any{"workspace_id": w.ws.ID, "member_ids": []string{w.member.User.ID}}).
			RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
	})
	t.Run("ChannelWritesNeedChannelsWrite", func(t *testing.T) {
		t.Parallel()
		_, writer := w.serviceBot(t, "bot:write")
		_, admin := w.serviceBot(t, "bot:admin")
		create := "/api/workspaces/" + w.ws.ID + "/channels"
		w.h.Post(t, create, writer, map[string]any{"name": "from-writer"}).RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
		w.h.Post(t, create, admin, map[string]any{"name": "from-admin"}).RequireStatus(t, http.StatusCreated)
		w.h.Get(t, create, writer).RequireStatus(t, http.StatusOK)
	})
}
