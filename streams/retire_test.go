package streams_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
)

// waitStreamGone waits until the workspace's stream is deleted.
func (b *relayBundle) waitStreamGone(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := b.js.Stream(context.Background(), streams.StreamName(b.ws.ID))
		return errors.Is(err, jetstream.ErrStreamNotFound)
	}, 10*time.Second, 20*time.Millisecond, "the idle stream was not retired")
}

func cursorsOf(events []streams.Event) []int64 {
	var out []int64
	for _, e := range events {
		out = append(out, e.Cursor)
	}
	return out
}

// TestRelayRetiresAnIdleStreamAndCreatesItAtTheNextEvent: a stream idle past RetireAfter is
// deleted; the workspace's next event creates it again after the last cursor, with seq ==
// cursor, and a reader after an older cursor is sent to Postgres (ErrNotHeld), never handed a
// stream that skips cursors.
func TestRelayRetiresAnIdleStreamAndCreatesItAtTheNextEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.appendEvents(t, 3, persist.EventInput{})
	ch, r, _ := b.start(t, func(c *streams.RelayConfig) { c.RetireAfter = 300 * time.Millisecond })
	ch.waitFor(t, 3)
	b.waitStreamGone(t)
	require.Eventually(t, func() bool { return counterValue(t, r, "natter_relay_streams_retired_total") == 1 },
		5*time.Second, 10*time.Millisecond) // counted once the deletion is answered
	_, err := streams.ReadAfter(ctx, b.nc, b.ws.ID, 0, 10)
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)

	b.appendEvents(t, 2, persist.EventInput{})
	ch.waitFor(t, 5)
	state, msgs := b.streamState(t)
	require.Equal(t, uint64(4), state.FirstSeq)
	require.Equal(t, uint64(5), state.LastSeq)
	require.Len(t, msgs, 2)
	require.Equal(t, uint64(4), msgs[0].Sequence)
	require.Equal(t, 0.0, counterValue(t, r, "natter_relay_stream_rebuilds_total"), "a retired stream is no lost one")
	// The woken stream is recorded once its events are in it: not retired, first cursor 4.
	require.Eventually(t, func() bool {
		st, err := persist.ReadV(ctx, b.store, func(tx *persist.Reader) (persist.RelayState, error) {
			return tx.RelayStateGet(ctx, b.ws.ID)
		})
		return err == nil && !st.StreamRetired && st.StreamFirst == 4 && st.Relayed == 5
	}, 5*time.Second, 10*time.Millisecond, "the woken stream is recorded")

	_, err = streams.ReadAfter(ctx, b.nc, b.ws.ID, 1, 10)
	require.ErrorIs(t, err, streams.ErrNotHeld, "cursors 2 and 3 are Postgres's to serve")
	got, err := streams.ReadAfter(ctx, b.nc, b.ws.ID, 3, 10)
	require.NoError(t, err)
	require.Equal(t, []int64{4, 5}, cursorsOf(got))

	// Idle again: retired again, and the next event still lands at its cursor.
	b.waitStreamGone(t)
	b.appendEvents(t, 1, persist.EventInput{})
	ch.waitFor(t, 6)
	state, _ = b.streamState(t)
	require.Equal(t, uint64(6), state.FirstSeq)
	require.Equal(t, uint64(6), state.LastSeq)
}

// TestRelayKeepsAStreamSomeoneReads: a consumer that does not leave with the stream (a
// subscription's, a socket feed's, a bot's) keeps it; a follower marked WhileStreamExists does
// not, and returns once the stream is retired.
func TestRelayKeepsAStreamSomeoneReads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.appendEvents(t, 2, persist.EventInput{})
	ch, _, _ := b.start(t, func(c *streams.RelayConfig) { c.RetireAfter = 200 * time.Millisecond })
	ch.waitFor(t, 2)
	_, err := b.js.CreateConsumer(ctx, streams.StreamName(b.ws.ID), jetstream.ConsumerConfig{Durable: "reader",
		AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)

	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	handled := make(chan int64, 10)
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		require.NoError(t, streams.Follow(fctx, streams.FollowConfig{NATS: b.nc, WorkspaceID: b.ws.ID, Durable: "leaves",
			WhileStreamExists: true, Start: func(context.Context) (streams.Start, error) { return streams.Start{}, nil },
			Handle: func(_ context.Context, m streams.Msg) { m.Ack(); handled <- m.Cursor }}))
	}()
	require.Equal(t, int64(1), <-handled)
	require.Equal(t, int64(2), <-handled)

	time.Sleep(time.Second) // five idle periods
	_, err = b.js.Stream(ctx, streams.StreamName(b.ws.ID))
	require.NoError(t, err, "a stream with a reader's consumer was retired")
	select {
	case <-followed:
		t.Fatal("the follower returned while its stream exists")
	default:
	}

	require.NoError(t, b.js.DeleteConsumer(ctx, streams.StreamName(b.ws.ID), "reader"))
	b.waitStreamGone(t)
	select {
	case <-followed:
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not return when its stream was retired")
	}
}

// TestFollowWhileStreamExistsReturnsWithoutAStream: nothing is left waiting for a dormant
// workspace's stream.
func TestFollowWhileStreamExistsReturnsWithoutAStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	done := make(chan error, 1)
	go func() {
		done <- streams.Follow(context.Background(), streams.FollowConfig{NATS: b.nc, WorkspaceID: b.ws.ID, Durable: "d",
			WhileStreamExists: true, Handle: func(context.Context, streams.Msg) {}})
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Follow waited for a stream that does not exist")
	}
}

// TestOrderedFollowerLeavesNoConsumer: once an ordered follower returns, the server holds no
// consumer of it (it would otherwise keep one for minutes, and with it the stream).
func TestOrderedFollowerLeavesNoConsumer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.appendEvents(t, 1, persist.EventInput{})
	ch, _, _ := b.start(t, nil)
	ch.waitFor(t, 1)
	fctx, cancel := context.WithCancel(ctx)
	live := make(chan int64, 1)
	done := make(chan error, 1)
	go func() {
		done <- streams.Follow(fctx, streams.FollowConfig{NATS: b.nc, WorkspaceID: b.ws.ID, OnLive: func(first int64) { live <- first },
			Handle: func(context.Context, streams.Msg) {}})
	}()
	require.Equal(t, int64(2), <-live)
	s, err := b.js.Stream(ctx, streams.StreamName(b.ws.ID))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return consumerCount(t, s) == 1 }, 5*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, 0, consumerCount(t, s))
}

func consumerCount(t *testing.T, s jetstream.Stream) int {
	t.Helper()
	info, err := s.Info(context.Background())
	require.NoError(t, err)
	return info.State.Consumers
}

// TestRelayTrustsAStreamMarkedRetiredButNotDeleted is a crash between the record and the
// deletion: the stream is kept as it is, and the next event follows in it.
func TestRelayTrustsAStreamMarkedRetiredButNotDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.appendEvents(t, 2, persist.EventInput{})
	ch, _, stop := b.start(t, nil)
	ch.waitFor(t, 2)
	stop()
	ok, err := b.store.RelayStreamRetired(ctx, b.ws.ID, 2)
	require.NoError(t, err)
	require.True(t, ok)
	b.appendEvents(t, 1, persist.EventInput{})
	ch, r, _ := b.start(t, nil)
	ch.waitFor(t, 3)
	b.requireMirror(t)
	require.Equal(t, 0.0, counterValue(t, r, "natter_relay_stream_rebuilds_total"))
}

// TestRelayBoundsAStream: a stream keeps at most StreamMaxMsgs events, which the relay does not
// take for lost ones; a lost stream is rebuilt with as many.
func TestRelayBoundsAStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.appendEvents(t, 12, persist.EventInput{})
	ch, r, _ := b.start(t, func(c *streams.RelayConfig) { c.StreamMaxMsgs = 5; c.VerifyInterval = time.Millisecond })
	ch.waitFor(t, 12)
	state, _ := b.streamState(t)
	require.Equal(t, uint64(5), state.Msgs)
	require.Equal(t, uint64(8), state.FirstSeq)
	b.appendEvents(t, 1, persist.EventInput{})
	ch.waitFor(t, 13)
	require.Equal(t, 0.0, counterValue(t, r, "natter_relay_stream_rebuilds_total"))

	require.NoError(t, b.js.DeleteStream(ctx, streams.StreamName(b.ws.ID)))
	b.appendEvents(t, 1, persist.EventInput{})
	ch.waitFor(t, 14)
	state, msgs := b.streamState(t)
	require.Equal(t, uint64(10), state.FirstSeq)
	require.Equal(t, uint64(14), state.LastSeq)
	require.Len(t, msgs, 5)
	require.Equal(t, 1.0, counterValue(t, r, "natter_relay_stream_rebuilds_total"))
}

// TestRelayRecordsAPruneWithoutWakingTheStream: pruning a dormant workspace's log creates no
// stream; the prune holds when the stream comes back at the next event.
func TestRelayRecordsAPruneWithoutWakingTheStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.appendEvents(t, 4, persist.EventInput{})
	ch, _, _ := b.start(t, func(c *streams.RelayConfig) {
		c.RetireAfter = 200 * time.Millisecond
		c.PollInterval = 20 * time.Millisecond
	})
	ch.waitFor(t, 4)
	b.waitStreamGone(t)
	keep := int64(1)
	_, err := persist.WithTxV(ctx, b.store, func(tx *persist.Tx) (persist.EventPruneResult, error) {
		return tx.EventPrune(ctx, b.ws.ID, persist.EventPruneParams{KeepLatest: &keep})
	})
	require.NoError(t, err)
	ch.waitFor(t, 4) // the poll finds the prune and records it
	require.Eventually(t, func() bool {
		pending, err := persist.WithTxV(ctx, b.store, func(tx *persist.Tx) ([]persist.RelayState, error) { return tx.RelayPending(ctx, 10) })
		return err == nil && len(pending) == 0
	}, 10*time.Second, 20*time.Millisecond, "the prune was not recorded")
	_, err = b.js.Stream(ctx, streams.StreamName(b.ws.ID))
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "a prune woke the stream")

	b.appendEvents(t, 1, persist.EventInput{})
	ch.waitFor(t, 5)
	state, _ := b.streamState(t)
	require.Equal(t, uint64(5), state.FirstSeq)
	require.Equal(t, uint64(5), state.LastSeq)
}

// TestRelayRelaysOthersWhileAStreamIsRetired: while an idle stream's deletion is under way (held
// open here, as a busy cluster's JetStream API holds it), the relay goes on relaying every other
// workspace; an event of the retiring workspace waits for the deletion, then goes into the
// stream created again after the last relayed cursor: nothing published into the stream being
// deleted, no rebuild.
func TestRelayRelaysOthersWhileAStreamIsRetired(t *testing.T) {
	t.Parallel()
	b := setup(t)
	busy := persisttest.Workspace(t, b.store, b.owner.ID)
	ch, busyRelayed, r := b.startRetiring(t, busy.ID)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	// A failing test must not leave the deletion held: the relay's stop waits for it.
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	streams.SetBeforeRetire(r, func(id string) {
		if id == b.ws.ID {
			entered <- struct{}{}
			<-release
		}
	})
	b.appendTo(t, busy.ID)
	busyRelayed.waitFor(t, 1)
	b.appendEvents(t, 1, persist.EventInput{})
	ch.waitFor(t, 1)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not start retiring the idle stream")
	}

	b.appendEvents(t, 1, persist.EventInput{}) // cursor 2 of the retiring workspace waits
	b.appendTo(t, busy.ID)
	busyRelayed.waitFor(t, 2)
	require.Empty(t, ch, "an event was relayed into a stream being deleted")
	state, _ := b.streamState(t)
	require.Equal(t, uint64(1), state.LastSeq, "the retiring stream is left as it was")

	releaseOnce()
	ch.waitFor(t, 2)
	// Read from the log's record: the idle stream may be retired again by now.
	st := b.relayState(t)
	require.Equal(t, int64(2), st.StreamFirst, "the stream was created after the last relayed cursor")
	require.Equal(t, int64(2), st.Relayed)
	require.Equal(t, 0.0, counterValue(t, r, "natter_relay_stream_rebuilds_total"), "a retired stream is no lost one")
	require.GreaterOrEqual(t, counterValue(t, r, "natter_relay_streams_retired_total"), 1.0)
}
