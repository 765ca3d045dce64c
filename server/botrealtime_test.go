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
)

// TestBotRealtime: bot tokens read the log with realtime:read, see only what the visibility rule
// lets them (not a direct conversation they are not in), and their sockets close when the token
// is revoked or the bot leaves the workspace.
func TestBotRealtime(t *testing.T) {
	t.Parallel()

	t.Run("BackfillNeedsRealtimeReadAndHidesOthersConversations", func(t *testing.T) {
		t.Parallel()
		b := setupRealtime(t)
		bot, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		_, blind := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"messages:read"}})
		mine := persisttest.DM(t, b.h.Store, b.ws.ID, b.owner.User.ID, bot.ID)
		inChannel := b.add(t, persist.EventInput{ChannelID: b.general})
		b.add(t, persist.EventInput{DirectConversationID: b.dm}) // the owner and the guest only
		inMine := b.add(t, persist.EventInput{DirectConversationID: mine})

		b.h.Get(t, "/api/realtime/events", blind.Token).RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
		_, status := b.h.DialSocket(t, servertest.Dial{Path: b.wsPath(""), Token: blind.Token})
		require.Equal(t, http.StatusForbidden, status)

		// A bot token implies its workspace.
		r := b.h.Get(t, "/api/realtime/events", tok.Token)
		r.RequireStatus(t, http.StatusOK)
		var page pageBody
		r.Decode(t, &page)
		var cursors []string
		for _, e := range page.Events {
			cursors = append(cursors, e.Cursor)
		}
		require.Equal(t, []string{"1", "2", persist.FormatCursor(inChannel), persist.FormatCursor(inMine)}, cursors)

		s := b.dial(t, tok.Token, "2")
		require.Equal(t, []string{persist.FormatCursor(inChannel), persist.FormatCursor(inMine)}, readCursors(t, s, 2))
		b.add(t, persist.EventInput{DirectConversationID: b.dm})
		last := b.add(t, persist.EventInput{ChannelID: b.general})
		require.Equal(t, persist.FormatCursor(last), s.Next(t).Cursor, "the others' conversation stays invisible live too")
	})
	t.Run("SocketClosesWhenTheTokenIsRevoked", func(t *testing.T) {
		t.Parallel()
		// Every delivery revalidates first. (The idle timer keeps its default: it also starts the
		// workspace's feed once the relay has made the stream.)
		b := setupRealtime(t, servertest.WithRealtime(func(c *realtime.Config) { c.RevalidateInterval = time.Nanosecond }))
		_, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		s := b.dial(t, tok.Token, "2")
		b.h.Post(t, "/api/bot-tokens/"+tok.ID+"/revoke", b.owner.Token, nil).RequireStatus(t, http.StatusOK)
		b.add(t, persist.EventInput{ChannelID: b.general})
		require.EqualValues(t, 1008, s.ExpectClose(t), "SPEC §Errors: WebSocket close 1008")
	})
	t.Run("SocketClosesWhenTheBotLeavesOnTheIdleTimer", func(t *testing.T) {
		t.Parallel()
		b := setupRealtime(t, servertest.WithRealtime(func(c *realtime.Config) { c.RevalidateInterval = 20 * time.Millisecond }))
		bot, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		s := b.dial(t, tok.Token, "2")
		b.h.Do(t, servertest.Request{Method: http.MethodDelete, Token: b.owner.Token,
			Path: "/api/workspaces/" + b.ws.ID + "/bots/" + bot.ID + "/membership"}).RequireStatus(t, http.StatusNoContent)
		require.EqualValues(t, 1008, s.ExpectClose(t), "SPEC §Errors: WebSocket close 1008")
	})
	t.Run("SocketClosesWhenTheBotIsDeleted", func(t *testing.T) {
		t.Parallel()
		// Every delivery revalidates first. (The idle timer keeps its default: it also starts the
		// workspace's feed once the relay has made the stream.)
		b := setupRealtime(t, servertest.WithRealtime(func(c *realtime.Config) { c.RevalidateInterval = time.Nanosecond }))
		bot, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		s := b.dial(t, tok.Token, "2")
		b.h.Do(t, servertest.Request{Method: http.MethodDelete, Token: b.owner.Token, Path: "/api/bots/" + bot.ID}).RequireStatus(t, http.StatusOK)
		b.add(t, persist.EventInput{ChannelID: b.general})
		require.EqualValues(t, 1008, s.ExpectClose(t), "SPEC §Errors: WebSocket close 1008")
	})
	t.Run("HandshakeCountsAsAUseRechecksDoNot", func(t *testing.T) {
		t.Parallel()
		// Every delivery revalidates first. (The idle timer keeps its default: it also starts the
		// workspace's feed once the relay has made the stream.)
		b := setupRealtime(t, servertest.WithRealtime(func(c *realtime.Config) { c.RevalidateInterval = time.Nanosecond }))
		bot, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		lastUsed := func() *time.Time {
			r := b.h.Get(t, "/api/workspaces/"+b.ws.ID+"/bots/"+bot.ID+"/tokens", b.owner.Token)
			var out struct {
				BotTokens []persist.BotToken `json:"bot_tokens"`
			}
			r.Decode(t, &out)
			return out.BotTokens[0].LastUsedAt
		}
		require.Nil(t, lastUsed())
		s := b.dial(t, tok.Token, "2")
		handshake := lastUsed()
		require.NotNil(t, handshake)
		for range 3 {
			cursor := b.add(t, persist.EventInput{ChannelID: b.general}) // each delivery rechecks first
			require.Equal(t, persist.FormatCursor(cursor), s.Next(t).Cursor)
		}
		require.Equal(t, *handshake, *lastUsed(), "rechecks of the open socket record no use")
	})
	t.Run("EveryHandshakeCountsAsAUse", func(t *testing.T) {
		t.Parallel()
		clock := persisttest.NewClock()
		b := setupRealtime(t, servertest.WithClock(clock))
		bot, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		lastUsed := func() time.Time {
			r := b.h.Get(t, "/api/workspaces/"+b.ws.ID+"/bots/"+bot.ID+"/tokens", b.owner.Token)
			var out struct {
				BotTokens []persist.BotToken `json:"bot_tokens"`
			}
			r.Decode(t, &out)
			require.NotNil(t, out.BotTokens[0].LastUsedAt)
			return *out.BotTokens[0].LastUsedAt
		}
		b.dial(t, tok.Token, "2")
		require.Equal(t, clock.Now(), lastUsed())
		clock.Advance(time.Minute)
		b.dial(t, tok.Token, "2") // a reconnect right after: SPEC §Bot token, each authentication
		require.Equal(t, clock.Now(), lastUsed())
	})
}
