package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams/streamstest"
)

// connectBot connects a bot runtime to the harness's embedded NATS listener as tok; with
// reconnect false the first cut-off closes the connection. What bots may do over NATS is
// streams' (streams/botaccess_test.go); the tests here hold it against the HTTP API.
func connectBot(t *testing.T, h *servertest.Harness, tok persist.BotToken, reconnect bool) (*streamstest.Bot, error) {
	t.Helper()
	return streamstest.ConnectBot(t, h.Embed.ClientURL(), tok, reconnect)
}

// TestBotNATSReadsWhatItsSocketWould: a bot's replay over NATS is the backfill the API gives
// its token, and an ephemeral event sent through the API reaches it with the server's fields.
func TestBotNATSReadsWhatItsSocketWould(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t)
	bot, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
	mine := persisttest.DM(t, b.h.Store, b.ws.ID, b.owner.User.ID, bot.ID)
	b.add(t, persist.EventInput{DirectConversationID: b.dm}) // 3: the owner and the guest only
	b.add(t, persist.EventInput{DirectConversationID: mine}) // 4

	nb, err := connectBot(t, b.h, tok, false)
	require.NoError(t, err)
	page := nb.Replay(t, map[string]any{"include_tail": true})
	require.Equal(t, []string{"1", "2", "4"}, eventCursors(page.Events), "the same events as its backfill")
	require.Equal(t, eventCursors(b.page(t, tok.Token, "").Events), eventCursors(page.Events))

	nb.Subscribe(t, page.Subjects)
	b.h.Post(t, "/api/realtime/ephemeral", b.member.Token, map[string]any{"workspace_id": b.ws.ID, "channel_id": b.general,
		"type": "typing.started"}).RequireStatus(t, http.StatusAccepted)
	e, _ := nb.Next(t)
	for c, err := persist.ParseCursor(e.Cursor); err == nil && c >= 1 && c <= 4; c, err = persist.ParseCursor(e.Cursor) {
		e, _ = nb.Next(t) // the replayed events, which a relay still catching up may publish again
	}
	require.Equal(t, "typing.started", e.Type)
	require.JSONEq(t, `{"user_id":"`+b.member.User.ID+`","channel_id":"`+b.general+`"}`, string(e.Payload),
		"the server's fields reach bots over NATS too")
}
