package streamstest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/streams"
)

// Event is an event envelope as a client reads it: the same bytes over a bot's NATS
// subscription, a replay and a WebSocket.
type Event struct {
	ID                   string          `json:"id"`
	Cursor               string          `json:"cursor"`
	Type                 string          `json:"type"`
	WorkspaceID          string          `json:"workspace_id"`
	ChannelID            string          `json:"channel_id"`
	DirectConversationID string          `json:"direct_conversation_id"`
	ActorID              string          `json:"actor_id"`
	Payload              json.RawMessage `json:"payload"`
}

// Bot is a bot runtime connected to NATS with its token, as a bot's own code connects.
type Bot struct {
	NC    *nats.Conn
	Token persist.BotToken
	// Reconnected receives once each time the connection comes back.
	Reconnected chan struct{}
	errs        chan error     // asynchronous errors: permission violations
	closed      chan struct{}  // the connection ended for good
	events      chan *nats.Msg // every subscription of Subscribe
}

// ConnectBot connects to the NATS server at url as tok; with reconnect false the first cut-off
// closes the connection for good.
func ConnectBot(t testing.TB, url string, tok persist.BotToken, reconnect bool) (*Bot, error) {
	t.Helper()
	b := &Bot{Token: tok, errs: make(chan error, 16), closed: make(chan struct{}), Reconnected: make(chan struct{}, 4),
		events: make(chan *nats.Msg, 64)}
	opts := []nats.Option{nats.Token(tok.Token), nats.CustomInboxPrefix(streams.BotInboxPrefix(tok.ID)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case b.errs <- err:
			default:
			}
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(b.closed) }),
		nats.ReconnectHandler(func(*nats.Conn) { b.Reconnected <- struct{}{} })}
	if reconnect {
		opts = append(opts, nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Millisecond), nats.ReconnectJitter(0, 0))
	} else {
		opts = append(opts, nats.NoReconnect())
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, err
	}
	b.NC = nc
	t.Cleanup(nc.Close)
	return b, nil
}

// ReplayPage is natter's answer to a bot's replay request.
type ReplayPage struct {
	Events     []Event  `json:"events"`
	NextCursor string   `json:"next_cursor"`
	HasMore    bool     `json:"has_more"`
	TailCursor *string  `json:"tail_cursor"`
	Subjects   []string `json:"subjects"`
	Code       string   `json:"code"`
}

// Replay asks natter for backfill over NATS.
func (b *Bot) Replay(t testing.TB, req map[string]any) ReplayPage {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("marshal the replay request: %v", err)
	}
	m, err := b.NC.Request(streams.BotReplaySubject(b.Token.ID), body, 10*time.Second)
	if err != nil {
		t.Fatalf("replay request: %v", err)
	}
	var out ReplayPage
	if err := json.Unmarshal(m.Data, &out); err != nil {
		t.Fatalf("replay answer: %v: %s", err, m.Data)
	}
	return out
}

// Subscribe subscribes to every subject given, all into one channel (in the order the server
// sends) that Next reads.
func (b *Bot) Subscribe(t testing.TB, subjects []string) {
	t.Helper()
	for _, s := range subjects {
		if _, err := b.NC.ChanSubscribe(s, b.events); err != nil {
			t.Fatalf("subscribe to %s: %v", s, err)
		}
	}
	if err := b.NC.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

// Next is the next event of the subscriptions, failing after a deadline.
func (b *Bot) Next(t testing.TB) (Event, *nats.Msg) {
	t.Helper()
	select {
	case m := <-b.events:
		var e Event
		if err := json.Unmarshal(m.Data, &e); err != nil {
			t.Fatalf("event on %s: %v: %s", m.Subject, err, m.Data)
		}
		return e, m
	case <-time.After(10 * time.Second):
		t.Fatalf("no event over NATS")
		return Event{}, nil
	}
}

// NextAfter is Next for durable events, skipping those at or below processed as a runtime does:
// a relay still catching up may publish, after the bot subscribed, events its replay returned.
func (b *Bot) NextAfter(t testing.TB, processed int64) (Event, *nats.Msg) {
	t.Helper()
	for {
		e, m := b.Next(t)
		if c, err := persist.ParseCursor(e.Cursor); err != nil || c > processed {
			return e, m
		}
	}
}

// ExpectError waits for an asynchronous error (a permission violation) containing contains.
func (b *Bot) ExpectError(t testing.TB, contains string) {
	t.Helper()
	select {
	case err := <-b.errs:
		if !strings.Contains(err.Error(), contains) {
			t.Fatalf("asynchronous error %q, want one containing %q", err, contains)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no asynchronous error %q", contains)
	}
}

// ExpectClosed waits for the server to cut the bot off.
func (b *Bot) ExpectClosed(t testing.TB) {
	t.Helper()
	select {
	case <-b.closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("the bot was not cut off")
	}
}
