package streams_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/streams"
)

// DESIGN "The event log and the relay": the relay publishes each event with Nats-Msg-Id
// <workspace_id>:<cursor> and the expected-last-sequence header cursor − 1, so that the stream
// sequence of an event is its cursor. These tests put a second publisher in the stream, the case
// where duplicate detection cannot help and only the guard and the stream check do.

// strayPublish stores a message no relay wrote in the workspace's stream, as a second publisher
// (an operator's tool, a misconfigured service) would.
func (b *relayBundle) strayPublish(t *testing.T) uint64 {
	t.Helper()
	ack, err := b.js.PublishMsg(context.Background(), &nats.Msg{Subject: "natter.events." + b.ws.ID + ".ws.stray",
		Data: []byte(`{"type":"stray"}`)}, jetstream.WithMsgID("stray-"+b.ws.ID))
	require.NoError(t, err)
	return ack.Sequence
}

// failures is a slog handler passing on the relay's "relay failed" records: the signal that a
// relay pass gave up, to wait on instead of sleeping.
type failures chan slog.Record

func (f failures) Enabled(context.Context, slog.Level) bool { return true }
func (f failures) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "relay failed" {
		select {
		case f <- r:
		default:
		}
	}
	return nil
}
func (f failures) WithAttrs([]slog.Attr) slog.Handler { return f }
func (f failures) WithGroup(string) slog.Handler      { return f }

func (f failures) wait(t *testing.T) slog.Record {
	t.Helper()
	select {
	case r := <-f:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not fail")
		return slog.Record{}
	}
}

// TestRelayRefusesToWritePastAStrayMessage: with a foreign message at the end of the stream,
// the next event's publish expects a last sequence the stream no longer has and is refused; the
// event is never stored at a sequence other than its cursor. The next pass finds the foreign
// last message and rebuilds the stream from the log.
func TestRelayRefusesToWritePastAStrayMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	failed := make(failures, 16)
	b.appendEvents(t, 2, persist.EventInput{})
	ch, _, _ := b.start(t, func(c *streams.RelayConfig) {
		c.Logger = slog.New(failed)
		c.VerifyInterval = time.Hour // the relay trusts the stream it verified: only the guard stands
	})
	ch.waitFor(t, 2)
	require.Equal(t, uint64(3), b.strayPublish(t))

	b.appendEvents(t, 1, persist.EventInput{}) // cursor 3
	failed.wait(t)
	state, msgs := b.streamState(t)
	require.Equal(t, uint64(3), state.LastSeq, "the relay wrote past the stray message")
	for _, m := range msgs {
		require.NotEqual(t, fmt.Sprintf("%s:%d", b.ws.ID, 3), m.Header.Get(jetstream.MsgIDHeader),
			"cursor 3 stored at sequence %d", m.Sequence)
	}

	b.appendEvents(t, 1, persist.EventInput{}) // cursor 4 wakes the relay again
	ch.waitFor(t, 4)
	b.requireMirror(t)
}

// TestRelayRebuildsAStreamEndingInAStrayMessage: a relay starting over a stream whose bounds
// match the log (last sequence between the relayed position and the head) but whose last
// message is not the relay's must not take that message as the event of its sequence.
func TestRelayRebuildsAStreamEndingInAStrayMessage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.appendEvents(t, 2, persist.EventInput{})
	ch, _, stop := b.start(t, nil)
	ch.waitFor(t, 2)
	stop()

	require.Equal(t, uint64(3), b.strayPublish(t))
	b.appendEvents(t, 1, persist.EventInput{}) // cursor 3, committed while no relay runs
	ch, _, _ = b.start(t, nil)
	ch.waitFor(t, 3)
	b.requireMirror(t)
}
