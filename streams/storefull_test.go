package streams_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
	"github.com/natterchat/natter/streams/streamstest"
)

// TestRelayResumesAfterStoreFull fills the disk under the embedded JetStream store: the relay's
// publishes go unanswered, Health says the relay is stalled, and once space is back the relay
// recovers the store by itself and the stream holds exactly the log again, read back by
// catch-up up to the log's last event (issue 23, silent failure 1: delivery stayed stuck
// until a restart, and readiness said nothing).
func TestRelayResumesAfterStoreFull(t *testing.T) {
	t.Parallel()
	dir := streamstest.SmallDisk(t, 4<<20)
	emb, err := streams.StartEmbedded(streams.EmbeddedConfig{StoreDir: filepath.Join(dir, "nats"), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(emb.Shutdown)
	nc, err := emb.Connect("test")
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	store := persisttest.NewStore(t, func(c *persist.Config) { *c = streams.StoreConfig(nc, *c) })
	owner := persisttest.User(t, store, nil)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	b := &relayBundle{store: store, nc: nc, js: js, owner: owner, ws: persisttest.Workspace(t, store, owner.ID)}

	health := make(chan bool, 16)
	relayedTo, relay, _ := b.start(t, func(c *streams.RelayConfig) {
		c.RecoverStore, c.StallAfter, c.PollInterval = emb.RecoverStore, time.Millisecond, 100*time.Millisecond
		c.OnHealth = func(stalled bool) { health <- stalled }
	})
	b.appendEvents(t, 10, persist.EventInput{})
	head := int64(len(b.log(t)))
	relayedTo.waitFor(t, head)
	require.NoError(t, relay.Health(t.Context()))

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
	head = int64(len(b.log(t)))
	relayedTo.waitFor(t, head)
	require.NoError(t, relay.Health(t.Context()))
	b.requireMirror(t)

	// Publishing works again, and catch-up reads the stream up to the log's end.
	b.appendEvents(t, 5, persist.EventInput{})
	head += 5
	relayedTo.waitFor(t, head)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	read, err := streams.ReadAfter(ctx, nc, b.ws.ID, 0, 1000)
	require.NoError(t, err)
	require.Len(t, read, int(head))
	require.Equal(t, head, read[len(read)-1].Cursor)
}
