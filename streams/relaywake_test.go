package streams_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
)

// appendTo appends one event to another workspace of the bundle's owner.
func (b *relayBundle) appendTo(t *testing.T, workspaceID string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, b.store.WithTx(ctx, func(tx *persist.Tx) error {
		_, err := tx.EventAppend(ctx, persist.EventInput{WorkspaceID: workspaceID, ActorID: b.owner.ID, Type: "test.event"})
		return err
	}))
}

// startRetiring runs a relay that retires streams idle for 200 ms and polls every 20 ms, and
// reports the recorded positions of the bundle's workspace and of another one.
func (b *relayBundle) startRetiring(t *testing.T, otherID string) (mine, other relayed, r *streams.Relay) {
	t.Helper()
	other = make(relayed, 100)
	mine, r, _ = b.start(t, func(c *streams.RelayConfig) {
		c.RetireAfter, c.PollInterval = 200*time.Millisecond, 20*time.Millisecond
		bundle := c.OnRelayed
		c.OnRelayed = func(id string, cursor int64) {
			bundle(id, cursor)
			if id == otherID {
				other <- cursor
			}
		}
	})
	return mine, other, r
}

// relayState reads what the relay recorded of the bundle's workspace.
func (b *relayBundle) relayState(t *testing.T) persist.RelayState {
	t.Helper()
	ctx := context.Background()
	st, err := persist.ReadV(ctx, b.store, func(tx *persist.Reader) (persist.RelayState, error) {
		return tx.RelayStateGet(ctx, b.ws.ID)
	})
	require.NoError(t, err)
	return st
}

// TestRelayRelaysOthersWhileAStreamForms: while a retired workspace's stream is being created
// again (held open here), the relay goes on relaying every other workspace; the waking
// workspace's events, the first previewed and the later ones too, go into its stream once it
// exists, at their cursors.
func TestRelayRelaysOthersWhileAStreamForms(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	busy := persisttest.Workspace(t, b.store, b.owner.ID)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	ch, busyRelayed, r := b.startRetiring(t, busy.ID)
	b.appendEvents(t, 1, persist.EventInput{})
	b.appendTo(t, busy.ID)
	ch.waitFor(t, 1)
	busyRelayed.waitFor(t, 1)
	// A reader keeps the busy workspace's stream; the other one's is retired.
	_, err := b.js.CreateConsumer(ctx, streams.StreamName(busy.ID), jetstream.ConsumerConfig{Durable: "reader",
		AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	b.waitStreamGone(t)

	// A failing test must not leave the creation held: the relay's stop waits for it.
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	streams.SetBeforeWake(r, func(id string) {
		if id == b.ws.ID {
			entered <- struct{}{}
			<-release
		}
	})
	b.appendEvents(t, 1, persist.EventInput{}) // cursor 2 wakes the stream
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not start creating the stream")
	}
	b.appendTo(t, busy.ID)
	busyRelayed.waitFor(t, 2)
	b.appendEvents(t, 1, persist.EventInput{}) // cursor 3, while the stream forms
	_, err = b.js.Stream(ctx, streams.StreamName(b.ws.ID))
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)

	releaseOnce()
	ch.waitFor(t, 3)
	// Read from the log's record: the idle stream may be retired again by now.
	st := b.relayState(t)
	require.Equal(t, int64(2), st.StreamFirst, "the stream was created at the first previewed cursor")
	require.Equal(t, int64(3), st.Relayed)
}

// TestRelayCreatesOneStreamAtATime: two retired workspaces waking together have their streams
// created one after the other (a cluster's JetStream API stalled under twenty at once), and
// both get their events.
func TestRelayCreatesOneStreamAtATime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	other := persisttest.Workspace(t, b.store, b.owner.ID)
	ch, otherRelayed, r := b.startRetiring(t, other.ID)
	b.appendEvents(t, 1, persist.EventInput{})
	b.appendTo(t, other.ID)
	ch.waitFor(t, 1)
	otherRelayed.waitFor(t, 1)
	b.waitStreamGone(t)
	require.Eventually(t, func() bool {
		_, err := b.js.Stream(ctx, streams.StreamName(other.ID))
		return err != nil
	}, 10*time.Second, 20*time.Millisecond, "the other stream was not retired")

	entered := make(chan string, 2)
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	streams.SetBeforeWake(r, func(id string) {
		entered <- id
		if id == b.ws.ID {
			<-release
		}
	})
	b.appendEvents(t, 1, persist.EventInput{})
	require.Equal(t, b.ws.ID, <-entered)
	b.appendTo(t, other.ID)
	require.Never(t, func() bool { return len(entered) > 0 }, 300*time.Millisecond, 10*time.Millisecond,
		"a second creation started while the first was under way")
	releaseOnce()
	require.Equal(t, other.ID, <-entered)
	ch.waitFor(t, 2)
	otherRelayed.waitFor(t, 2)
}
