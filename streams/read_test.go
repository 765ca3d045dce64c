package streams_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/streams"
)

// TestReadAfter: a read returns the stream's events after a cursor, cursor == sequence, the
// envelopes as relayed, at most n of them, and nothing at the end; it leaves no consumer.
func TestReadAfter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.appendEvents(t, 6, persist.EventInput{})
	ch, _, _ := b.start(t, nil)
	ch.waitFor(t, 6)
	ctx := context.Background()
	_, msgs := b.streamState(t)
	got, err := streams.ReadAfter(ctx, b.nc, b.ws.ID, 2, 3)
	require.NoError(t, err)
	require.Len(t, got, 3)
	for i, e := range got {
		require.Equal(t, int64(3+i), e.Cursor)
		require.Equal(t, b.ws.ID, e.WorkspaceID)
		require.Equal(t, string(msgs[2+i].Data), string(e.Envelope))
	}
	got, err = streams.ReadAfter(ctx, b.nc, b.ws.ID, 4, 100)
	require.NoError(t, err)
	require.Len(t, got, 2)
	got, err = streams.ReadAfter(ctx, b.nc, b.ws.ID, 6, 100)
	require.NoError(t, err)
	require.Empty(t, got)
	s, err := b.js.Stream(ctx, streams.StreamName(b.ws.ID))
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.Zero(t, info.State.Consumers, "a read left its consumer behind")
	_, err = streams.ReadAfter(ctx, b.nc, "no-such-workspace", 0, 10)
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
}

// TestReadAfterStopsAtWhatIsNotTheLog: a deleted message ends a read before the gap, a purged
// start is not held, and a message someone else published is not read as an event.
func TestReadAfterStopsAtWhatIsNotTheLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.appendEvents(t, 6, persist.EventInput{})
	ch, _, _ := b.start(t, nil)
	ch.waitFor(t, 6)
	ctx := context.Background()
	s, err := b.js.Stream(ctx, streams.StreamName(b.ws.ID))
	require.NoError(t, err)
	require.NoError(t, s.DeleteMsg(ctx, 4))
	got, err := streams.ReadAfter(ctx, b.nc, b.ws.ID, 1, 100)
	require.NoError(t, err)
	require.Len(t, got, 2) // 2 and 3
	_, err = streams.ReadAfter(ctx, b.nc, b.ws.ID, 3, 100)
	require.ErrorIs(t, err, streams.ErrNotHeld)

	require.NoError(t, s.Purge(ctx, jetstream.WithPurgeSequence(3)))
	_, err = streams.ReadAfter(ctx, b.nc, b.ws.ID, 1, 100)
	require.ErrorIs(t, err, streams.ErrNotHeld)

	_, err = b.js.PublishMsg(ctx, &nats.Msg{Subject: fmt.Sprintf("natter.events.%s.ws.stray", b.ws.ID), Data: []byte(`{}`)},
		jetstream.WithMsgID("stray"))
	require.NoError(t, err)
	got, err = streams.ReadAfter(ctx, b.nc, b.ws.ID, 4, 100)
	require.NoError(t, err)
	require.Len(t, got, 2, "the stray message at 7 is not an event") // 5 and 6
}
