package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestSearchKeepsDMsFromBotsWithoutDMsRead: SPEC §Bot scopes, direct conversations are read with
// dms:read. A bot in a conversation searching with messages:read alone finds the channel's
// messages, not the conversation's; the same bot with dms:read finds both.
func TestSearchKeepsDMsFromBotsWithoutDMsRead(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	c := newChat(t, h)
	bot, blind := persisttest.Bot(t, h.Store, c.owner.User, c.ws.ID, &persisttest.BotOpts{Scopes: []string{"messages:read"}})
	seeing := persisttest.BotToken(t, h.Store, c.owner.User, c.ws.ID, bot.ID, "messages:read", "dms:read")
	dm := persisttest.DM(t, h.Store, c.ws.ID, c.owner.User.ID, bot.ID)
	inChannel := c.say(t, c.owner, channelMessages(c.general.ID), "needle in the channel")
	inDM := c.say(t, c.owner, "/api/dms/"+dm+"/messages", "needle in the conversation")

	found := func(token string) []string {
		r := h.Get(t, "/api/search?workspace_id="+c.ws.ID+"&q=needle&sort=newest", token)
		r.RequireStatus(t, http.StatusOK)
		var page persist.SearchPage
		r.Decode(t, &page)
		ids := []string{}
		for _, res := range page.Results {
			ids = append(ids, res.ID)
		}
		return ids
	}
	require.Equal(t, []string{inChannel.ID}, found(blind.Token))
	require.Equal(t, []string{inDM.ID, inChannel.ID}, found(seeing.Token))
	// Naming the conversation does not open it either.
	h.Get(t, "/api/search?workspace_id="+c.ws.ID+"&q=needle&direct_conversation_id="+dm, blind.Token).
		RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
}

// TestAgentProgressScopes: SPEC §Bot scopes and CONTRACT §Events: agent.progress needs a bot token
// with agent_activity:write, and into a direct conversation dms:write as well (dms:read is not
// enough: progress is writing).
func TestAgentProgressScopes(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	c := newChat(t, h)
	base := []string{"messages:write", "agent_activity:write"}
	bot, reader := persisttest.Bot(t, h.Store, c.owner.User, c.ws.ID, &persisttest.BotOpts{Scopes: append(base, "dms:read")})
	writer := persisttest.BotToken(t, h.Store, c.owner.User, c.ws.ID, bot.ID, append(base, "dms:write")...)
	noAgent := persisttest.BotToken(t, h.Store, c.owner.User, c.ws.ID, bot.ID, "messages:write", "dms:write")
	dm := persisttest.DM(t, h.Store, c.ws.ID, c.owner.User.ID, bot.ID)
	progress := func(token string, target map[string]any) *servertest.Response {
		body := map[string]any{"type": "agent.progress", "payload": map[string]any{"step": "thinking"}}
		for k, v := range target {
			body[k] = v
		}
		return h.Post(t, "/api/realtime/ephemeral", token, body)
	}
	inDM := map[string]any{"direct_conversation_id": dm}
	inChannel := map[string]any{"channel_id": c.general.ID}

	progress(reader.Token, inDM).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	progress(writer.Token, inDM).RequireStatus(t, http.StatusAccepted)
	progress(reader.Token, inChannel).RequireStatus(t, http.StatusAccepted)
	progress(noAgent.Token, inChannel).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	progress(noAgent.Token, inDM).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
}
