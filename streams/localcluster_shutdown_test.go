package streams_test

import (
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

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
	for i := range 30 {
		cfg := fmt.Sprintf(`{"name":"S%d","subjects":["s.%d"],"storage":"file","num_replicas":3}`, i, i)
		require.NoError(t, nc.PublishRequest("$JS.API.STREAM.CREATE.S"+strconv.Itoa(i), nc.NewRespInbox(), []byte(cfg)))
	}
	require.NoError(t, nc.Flush()) // the node has every request
	nc.Close()
	lc.Shutdown()
	require.Eventually(t, func() bool { return openStores() <= before }, 5*time.Second, 10*time.Millisecond,
		"%d streams left running", openStores()-before)
}
