package streams_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/streams"
)

// blockStream keeps the relay from creating the workspace's stream: another stream holds its
// subjects (JetStream refuses overlapping ones) until the returned function deletes it.
func (b *relayBundle) blockStream(t *testing.T) func() {
	t.Helper()
	ctx := context.Background()
	_, err := b.js.CreateStream(ctx, jetstream.StreamConfig{Name: "blocker_" + b.ws.ID,
		Subjects: []string{streams.EventsSubjects(b.ws.ID)}, Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	return func() { require.NoError(t, b.js.DeleteStream(ctx, "blocker_"+b.ws.ID)) }
}

// nextPreview reads previews until one of cursor comes.
func nextPreview(t *testing.T, sub *nats.Subscription, workspaceID string, cursor int64) (streams.Event, *nats.Msg) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		m, err := sub.NextMsg(time.Until(deadline))
		require.NoError(t, err, "no preview of cursor %d", cursor)
		ev, err := streams.DecodePreview(workspaceID, m)
		require.NoError(t, err)
		if ev.Cursor == cursor {
			return ev, m
		}
	}
	t.Fatalf("no preview of cursor %d", cursor)
	return streams.Event{}, nil
}

// TestRelayPreviewsAWakingWorkspace: the first events of a workspace whose stream was retired
// go out on its preview subject before the stream is created (here it cannot be, until the
// blocker goes), each exactly as the stream then holds it: subject, envelope, headers, cursor.
// A new workspace's first events, whose stream is created for the first time, are not.
func TestRelayPreviewsAWakingWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.appendEvents(t, 2, persist.EventInput{})
	ch, r, stop := b.start(t, func(c *streams.RelayConfig) {
		c.RetireAfter = 200 * time.Millisecond
		c.PollInterval = 20 * time.Millisecond
	})
	ch.waitFor(t, 2)
	require.Equal(t, 0.0, counterValue(t, r, "natter_relay_previewed_total"), "a new workspace's stream is no waking one")
	b.waitStreamGone(t)
	sub, err := b.nc.SubscribeSync(streams.PreviewSubject(b.ws.ID))
	require.NoError(t, err)
	unblock := b.blockStream(t)

	b.appendEvents(t, 1, persist.EventInput{})
	first, firstMsg := nextPreview(t, sub, b.ws.ID, 3)
	_, err = b.js.Stream(ctx, streams.StreamName(b.ws.ID))
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "previewed before the stream exists")
	// The relay tries again (and previews again) until it can create the stream: a reader
	// takes each cursor once.
	b.appendEvents(t, 1, persist.EventInput{})
	second, secondMsg := nextPreview(t, sub, b.ws.ID, 4)
	unblock()
	ch.waitFor(t, 4)
	stop() // before the idle stream is retired again
	state, msgs := b.streamState(t)
	require.Equal(t, uint64(3), state.FirstSeq)
	for i, p := range []*nats.Msg{firstMsg, secondMsg} {
		m := msgs[i]
		require.Equal(t, int64(m.Sequence), []streams.Event{first, second}[i].Cursor)
		require.Equal(t, m.Subject, p.Header.Get("Natter-Subject"))
		require.Equal(t, string(m.Data), string(p.Data))
		require.Equal(t, m.Header.Get(jetstream.MsgIDHeader), p.Header.Get(jetstream.MsgIDHeader))
	}
	require.GreaterOrEqual(t, counterValue(t, r, "natter_relay_previewed_total"), 2.0)
}

// TestDecodePreviewRefusesStrangers: a preview names its own workspace, on its own subject, with
// the relay's message id; anything else is no event.
func TestDecodePreviewRefusesStrangers(t *testing.T) {
	t.Parallel()
	const ws, other = "wsp_01hzzzzzzzzzzzzzzzzzzzzzzz", "wsp_01hyyyyyyyyyyyyyyyyyyyyyyy"
	msg := func(subject, eventSubject, id string) *nats.Msg {
		h := nats.Header{}
		h.Set("Natter-Subject", eventSubject)
		h.Set(jetstream.MsgIDHeader, id)
		return &nats.Msg{Subject: subject, Header: h, Data: []byte(`{}`)}
	}
	good := msg(streams.PreviewSubject(ws), "natter.events."+ws+".ws.test.event", ws+":7")
	ev, err := streams.DecodePreview(ws, good)
	require.NoError(t, err)
	require.Equal(t, int64(7), ev.Cursor)
	require.Equal(t, "test.event", ev.Type)
	for name, m := range map[string]*nats.Msg{
		"OtherWorkspacesEvent":   msg(streams.PreviewSubject(ws), "natter.events."+other+".ws.test.event", ws+":7"),
		"OtherWorkspacesSubject": msg(streams.PreviewSubject(other), "natter.events."+ws+".ws.test.event", ws+":7"),
		"OtherWorkspacesID":      msg(streams.PreviewSubject(ws), "natter.events."+ws+".ws.test.event", other+":7"),
		"NoCursor":               msg(streams.PreviewSubject(ws), "natter.events."+ws+".ws.test.event", ws+":"),
		"ZeroCursor":             msg(streams.PreviewSubject(ws), "natter.events."+ws+".ws.test.event", ws+":0"),
		"NotAnEventSubject":      msg(streams.PreviewSubject(ws), "natter.ephemeral."+ws+".ch.x.typing", ws+":7"),
	} {
		_, err := streams.DecodePreview(ws, m)
		require.Error(t, err, name)
	}
}
