package streams_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
	"github.com/natterchat/natter/streams/streamstest"
)

// TestRelayResumesAfterClusterStoreFull fills the disk under the stores of an external
// three-node cluster (real nats-server nodes): the stream keeps a write error on its files and
// refuses every later publish even once space is back, and natter cannot restart the cluster's
// servers. The relay reports the stall, replaces the stream that answers but refuses writes, and
// once space is back the rebuilt stream holds exactly the log and catch-up reads it to the end
// (issue 23: a full store was reported on a cluster, but delivery stayed stuck).
func TestRelayResumesAfterClusterStoreFull(t *testing.T) {
	t.Parallel()
	dir := streamstest.SmallDisk(t, 64<<20)
	lc, err := streams.StartLocalCluster(streams.LocalClusterConfig{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(lc.Shutdown)
	nc, err := nats.Connect(lc.NatterURLs())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	store := persisttest.NewStore(t, persisttest.WithCommitHook(streams.WakeRelay(nc)))
	owner := persisttest.User(t, store, nil)
	b := &relayBundle{store: store, nc: nc, js: js, owner: owner, ws: persisttest.Workspace(t, store, owner.ID)}
	health := make(chan bool, 16)
	relayedTo, relay, _ := b.start(t, func(c *streams.RelayConfig) {
		c.StallAfter, c.PollInterval = time.Millisecond, 100*time.Millisecond
		c.OnHealth = func(stalled bool) { health <- stalled }
	})
	b.appendEvents(t, 10, persist.EventInput{})
	relayedTo.waitFor(t, 10)

	filler := streamstest.FillDisk(t, dir)
	b.appendEvents(t, 20, persist.EventInput{})
	select {
	case stalled := <-health:
		require.True(t, stalled)
	case <-time.After(60 * time.Second):
		t.Fatal("the relay never said it was stalled")
	}
	require.ErrorIs(t, relay.Health(t.Context()), streams.ErrRelayStalled)

	require.NoError(t, os.Remove(filler))
	select {
	case stalled := <-health:
		require.False(t, stalled)
	case <-time.After(60 * time.Second):
		t.Fatal("the relay did not resume after space came back")
	}
	head := int64(len(b.log(t)))
	relayedTo.waitFor(t, head)
	b.requireMirror(t)

	b.appendEvents(t, 5, persist.EventInput{})
	head += 5
	relayedTo.waitFor(t, head)
	// Right after the disk came back the cluster may still be placing the reader's consumer
	// (a read then fails with "no responders"), so the read is retried for a while.
	var read []streams.Event
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		read, err = streams.ReadAfter(ctx, nc, b.ws.ID, 0, 1000)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reading the stream: %v", err)
		}
	}
	require.Len(t, read, int(head))
	require.Equal(t, head, read[len(read)-1].Cursor)
}
