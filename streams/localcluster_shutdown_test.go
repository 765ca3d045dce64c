package streams_test

import (
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/streams"
)

// TestLocalClusterShutdownLeavesNoStream: streams a client asked a 3-node cluster for just
// before it stops (relays left behind by natter replicas that are stopping) are created and
// stopped with the nodes, or never created; none is left running for the rest of the process,
// its store ticking and its files open. Not parallel: it counts the stores of the whole process.
func TestLocalClusterShutdownLeavesNoStream(t *testing.T) {
	before := openStores()
	lc, err := streams.StartLocalCluster(streams.LocalClusterConfig{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	nc, err := nats.Connect(lc.NatterURLs())
	require.NoError(t, err)
	requireNoStoreLeftAfter(t, before, nc, 30, 3, lc.Shutdown)
}
