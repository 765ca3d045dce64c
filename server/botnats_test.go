package server_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
)

// natsBot is a bot runtime connected to the embedded NATS listener with its token.
type natsBot struct {
	nc     *nats.Conn
	token  persist.BotToken
	errs   chan error     // asynchronous errors: permission violations
	closed chan struct{}  // the connection ended for good
	recon  chan struct{}  // the connection came back
	events chan *nats.Msg // every subscription of subscribe
}

// connectBot connects as tok; with reconnect false the first cut-off closes the connection.
func connectBot(t *testing.T, h *servertest.Harness, tok persist.BotToken, reconnect bool) (*natsBot, error) {
	t.Helper()
	b := &natsBot{token: tok, errs: make(chan error, 16), closed: make(chan struct{}), recon: make(chan struct{}, 4),
		events: make(chan *nats.Msg, 64)}
	opts := []nats.Option{nats.Token(tok.Token), nats.CustomInboxPrefix(streams.BotInboxPrefix(tok.ID)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case b.errs <- err:
			default:
			}
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(b.closed) }),
		nats.ReconnectHandler(func(*nats.Conn) { b.recon <- struct{}{} })}
	if reconnect {
		opts = append(opts, nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Millisecond), nats.ReconnectJitter(0, 0))
	} else {
		opts = append(opts, nats.NoReconnect())
	}
	nc, err := nats.Connect(h.Embed.ClientURL(), opts...)
	if err != nil {
		return nil, err
	}
	b.nc = nc
	t.Cleanup(nc.Close)
	return b, nil
}

type replayPage struct {
	Events     []servertest.SocketEvent `json:"events"`
	NextCursor string                   `json:"next_cursor"`
	HasMore    bool                     `json:"has_more"`
	TailCursor *string                  `json:"tail_cursor"`
	Subjects   []string                 `json:"subjects"`
	Code       string                   `json:"code"`
}

// replay asks natter for backfill over NATS.
func (b *natsBot) replay(t *testing.T, req map[string]any) replayPage {
	t.Helper()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	m, err := b.nc.Request(streams.BotReplaySubject(b.token.ID), body, 10*time.Second)
	require.NoError(t, err)
	var out replayPage
	require.NoError(t, json.Unmarshal(m.Data, &out), "%s", m.Data)
	return out
}

// subscribe subscribes to every live subject the bot may read, all into one channel (in the
// order the server sends).
func (b *natsBot) subscribe(t *testing.T, subjects []string) {
	t.Helper()
	for _, s := range subjects {
		_, err := b.nc.ChanSubscribe(s, b.events)
		require.NoError(t, err)
	}
	require.NoError(t, b.nc.Flush())
}

func (b *natsBot) next(t *testing.T) (servertest.SocketEvent, *nats.Msg) {
	t.Helper()
	select {
	case m := <-b.events:
		var e servertest.SocketEvent
		require.NoError(t, json.Unmarshal(m.Data, &e))
		return e, m
	case <-time.After(10 * time.Second):
		t.Fatalf("no event over NATS")
		return servertest.SocketEvent{}, nil
	}
}

// nextAfter is next for durable events, skipping those at or below processed as a runtime does:
// a relay still catching up may publish, after the bot subscribed, events its replay returned.
func (b *natsBot) nextAfter(t *testing.T, processed int64) (servertest.SocketEvent, *nats.Msg) {
	t.Helper()
	for {
		e, m := b.next(t)
		if c, err := persist.ParseCursor(e.Cursor); err != nil || c > processed {
			return e, m
		}
	}
}

func (b *natsBot) expectError(t *testing.T, contains string) {
	t.Helper()
	select {
	case err := <-b.errs:
		require.ErrorContains(t, err, contains)
	case <-time.After(10 * time.Second):
		t.Fatalf("no asynchronous error %q", contains)
	}
}

func (b *natsBot) expectClosed(t *testing.T) {
	t.Helper()
	select {
	case <-b.closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("the bot was not cut off")
	}
}

func TestBotNATS(t *testing.T) {
	t.Parallel()

	t.Run("ReadsWhatItsSocketWouldAndNothingElse", func(t *testing.T) {
		t.Parallel()
		b := setupRealtime(t)
		bot, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		mine := persisttest.DM(t, b.h.Store, b.ws.ID, b.owner.User.ID, bot.ID)
		b.add(t, persist.EventInput{DirectConversationID: b.dm}) // 3: the owner and the guest only
		b.add(t, persist.EventInput{DirectConversationID: mine}) // 4

		nb, err := connectBot(t, b.h, tok, false)
		require.NoError(t, err)
		page := nb.replay(t, map[string]any{"include_tail": true})
		require.Equal(t, []string{"1", "2", "4"}, eventCursors(page.Events), "the same events as its backfill")
		require.Equal(t, eventCursors(b.page(t, tok.Token, "").Events), eventCursors(page.Events))
		require.Equal(t, "4", *page.TailCursor)
		require.ElementsMatch(t, []string{
			"natter.events." + b.ws.ID + ".ws.>", "natter.events." + b.ws.ID + ".ch.>", "natter.events." + b.ws.ID + ".dm." + mine + ".>",
			"natter.ephemeral." + b.ws.ID + ".ws.>", "natter.ephemeral." + b.ws.ID + ".ch.>", "natter.ephemeral." + b.ws.ID + ".dm." + mine + ".>",
		}, page.Subjects)

		nb.subscribe(t, page.Subjects)
		b.add(t, persist.EventInput{DirectConversationID: b.dm})
		inChannel := b.add(t, persist.EventInput{ChannelID: b.general})
		inMine := b.add(t, persist.EventInput{DirectConversationID: mine})
		e, m := nb.nextAfter(t, 4)
		require.Equal(t, persist.FormatCursor(inChannel), e.Cursor, "the others' conversation never arrives")
		require.Equal(t, b.ws.ID+":"+e.Cursor, m.Header.Get("Nats-Msg-Id"), "the stream sequence is the cursor")
		e, _ = nb.nextAfter(t, inChannel)
		require.Equal(t, persist.FormatCursor(inMine), e.Cursor)
		b.h.Post(t, "/api/realtime/ephemeral", b.member.Token, map[string]any{"workspace_id": b.ws.ID, "channel_id": b.general,
			"type": "typing.started"}).RequireStatus(t, http.StatusAccepted)
		e, _ = nb.next(t)
		require.Equal(t, "typing.started", e.Type)
		require.JSONEq(t, `{"user_id":"`+b.member.User.ID+`","channel_id":"`+b.general+`"}`, string(e.Payload),
			"the server's fields reach bots over NATS too")

		// Anything wider or elsewhere is refused.
		for _, subject := range []string{"natter.events." + b.ws.ID + ".>", "natter.events." + b.ws.ID + ".dm." + b.dm + ".>",
			"natter.events.>", "_INBOX.>", "$JS.API.>"} {
			_, err := nb.nc.SubscribeSync(subject)
			require.NoError(t, err)
			nb.expectError(t, "Permissions Violation for Subscription")
		}
		for _, subject := range []string{"natter.events." + b.ws.ID + ".ch." + b.general + ".message.created", "$JS.API.INFO",
			streams.BotReplaySubject("btk_someone_else")} {
			require.NoError(t, nb.nc.Publish(subject, []byte(`{}`)))
			nb.expectError(t, "Permissions Violation for Publish")
		}
		require.Equal(t, []string{"1", "2", "3", "4", "5", "6", "7"}, eventCursors(b.page(t, b.owner.Token, "").Events),
			"nothing reached the log")
	})
	t.Run("ResumesFromACursor", func(t *testing.T) {
		t.Parallel()
		b := setupRealtime(t)
		_, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		for range 5 {
			b.add(t, persist.EventInput{ChannelID: b.general}) // 3-7
		}
		nb, err := connectBot(t, b.h, tok, false)
		require.NoError(t, err)
		page := nb.replay(t, map[string]any{"after_cursor": "3", "limit": 2})
		require.Equal(t, []string{"4", "5"}, eventCursors(page.Events))
		require.True(t, page.HasMore)
		page = nb.replay(t, map[string]any{"after_cursor": page.NextCursor})
		require.Equal(t, []string{"6", "7"}, eventCursors(page.Events))
		require.False(t, page.HasMore)
		require.Equal(t, "resync_required", nb.replay(t, map[string]any{"after_cursor": "99"}).Code)
		require.Equal(t, "invalid_request", nb.replay(t, map[string]any{"limit": 0}).Code)
		require.Empty(t, nb.replay(t, map[string]any{"limit": 501}).Code, "above 500 reads as 500")
	})
	t.Run("OnlyLiveTokensWithRealtimeReadGetIn", func(t *testing.T) {
		t.Parallel()
		b := setupRealtime(t)
		_, reader := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		_, blind := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"messages:read"}})
		revoked := persisttest.BotToken(t, b.h.Store, b.owner.User, b.ws.ID, reader.BotUserID, "bot:read")
		b.h.Post(t, "/api/bot-tokens/"+revoked.ID+"/revoke", b.owner.Token, nil).RequireStatus(t, http.StatusOK)
		for _, tok := range []persist.BotToken{blind, revoked, {ID: "btk_x", Token: "ccb_unknown"}, {ID: "x", Token: b.owner.Token}} {
			_, err := connectBot(t, b.h, tok, false)
			require.True(t, errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization"), "%v", err)
		}
		_, err := nats.Connect(b.h.Embed.ClientURL(), nats.NoReconnect())
		require.Error(t, err, "no credentials, no connection")
		_, err = connectBot(t, b.h, reader, false)
		require.NoError(t, err)
	})
	t.Run("CutOffOnRevocationRemovalAndDeletion", func(t *testing.T) {
		t.Parallel()
		// No periodic recheck runs within the test: each change's announcement cuts off at once.
		b := setupRealtime(t, servertest.WithBotAccess(func(c *streams.BotAccessConfig) { c.RevalidateInterval = time.Hour }))
		connect := func() (persist.User, *natsBot) {
			bot, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
			nb, err := connectBot(t, b.h, tok, false)
			require.NoError(t, err)
			nb.replay(t, nil)
			return bot, nb
		}
		_, revokedBot := connect()
		b.h.Post(t, "/api/bot-tokens/"+revokedBot.token.ID+"/revoke", b.owner.Token, nil).RequireStatus(t, http.StatusOK)
		revokedBot.expectClosed(t)

		removed, removedBot := connect()
		b.h.Do(t, servertest.Request{Method: http.MethodDelete, Token: b.owner.Token,
			Path: "/api/workspaces/" + b.ws.ID + "/bots/" + removed.ID + "/membership"}).RequireStatus(t, http.StatusNoContent)
		removedBot.expectClosed(t)

		deleted, deletedBot := connect()
		b.h.Do(t, servertest.Request{Method: http.MethodDelete, Token: b.owner.Token, Path: "/api/bots/" + deleted.ID}).RequireStatus(t, http.StatusOK)
		deletedBot.expectClosed(t)

		_, err := connectBot(t, b.h, revokedBot.token, false)
		require.Error(t, err, "and cannot come back")
	})
	t.Run("ANewConversationReconnectsWithItsSubject", func(t *testing.T) {
		t.Parallel()
		b := setupRealtime(t, servertest.WithBotAccess(func(c *streams.BotAccessConfig) { c.RevalidateInterval = 20 * time.Millisecond }))
		bot, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		nb, err := connectBot(t, b.h, tok, true)
		require.NoError(t, err)
		require.Len(t, nb.replay(t, nil).Subjects, 4)
		r := b.h.Post(t, "/api/dms", b.member.Token, map[string]any{"workspace_id": b.ws.ID, "member_ids": []string{bot.ID}})
		r.RequireStatus(t, http.StatusCreated)
		dm := r.JSON(t)["conversation"].(map[string]any)["id"].(string)
		select {
		case <-nb.recon:
		case <-time.After(10 * time.Second):
			t.Fatalf("the bot was not reconnected")
		}
		page := nb.replay(t, nil)
		require.Contains(t, page.Subjects, "natter.events."+b.ws.ID+".dm."+dm+".>")
		nb.subscribe(t, page.Subjects)
		b.h.Post(t, "/api/dms/"+dm+"/messages", b.member.Token, map[string]any{"body": "hello bot"}).RequireStatus(t, http.StatusCreated)
		var processed int64
		if n := len(page.Events); n > 0 {
			processed, _ = persist.ParseCursor(page.Events[n-1].Cursor)
		}
		e, _ := nb.nextAfter(t, processed)
		require.Equal(t, dm, e.DirectConversationID)
	})
	t.Run("ConnectingCountsAsAUse", func(t *testing.T) {
		t.Parallel()
		b := setupRealtime(t)
		bot, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		_, err := connectBot(t, b.h, tok, false)
		require.NoError(t, err)
		r := b.h.Get(t, "/api/workspaces/"+b.ws.ID+"/bots/"+bot.ID+"/tokens", b.owner.Token)
		var out struct {
			BotTokens []persist.BotToken `json:"bot_tokens"`
		}
		r.Decode(t, &out)
		require.NotNil(t, out.BotTokens[0].LastUsedAt)
	})
}
