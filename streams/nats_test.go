package streams_test

import (
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/streams"
	"github.com/natterchat/natter/streams/streamstest"
)

// TestEmbeddedAuthenticatesEveryClient: natter's own connections get in with the server's
// token; on the listener, a client without credentials, with a guessed token, or with a bot token
// while no BotAccess admits bots, is refused.
func TestEmbeddedAuthenticatesEveryClient(t *testing.T) {
	t.Parallel()
	emb, nc := streamstest.Embedded(t)
	require.True(t, nc.IsConnected())
	for _, opts := range [][]nats.Option{
		{nats.NoReconnect()},
		{nats.NoReconnect(), nats.Token("natter_guess")},
		{nats.NoReconnect(), nats.Token("ccb_unknown")},
		{nats.NoReconnect(), nats.UserInfo("natter", "")},
	} {
		c, err := nats.Connect(emb.ClientURL(), opts...)
		require.ErrorIs(t, err, nats.ErrAuthorization)
		require.Nil(t, c)
	}
}

// openStores counts the process's JetStream file stores still running (one goroutine each).
func openStores() int {
	buf := make([]byte, 1<<24)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "server.(*fileStore).flushStreamStateLoop(")
}

// requireNoStoreLeftAfter asks nc's server for n streams of the given replicas without waiting
// for the answers, as a relay left behind by a stopping natter would, closes nc, runs shutdown
// and requires the process to be back to the stores it had before the server started (before,
// counted by openStores then).
func requireNoStoreLeftAfter(t *testing.T, before int, nc *nats.Conn, n, replicas int, shutdown func()) {
	t.Helper()
	for i := range n {
		cfg := fmt.Sprintf(`{"name":"S%d","subjects":["s.%d"],"storage":"file","num_replicas":%d}`, i, i, replicas)
		require.NoError(t, nc.PublishRequest("$JS.API.STREAM.CREATE.S"+strconv.Itoa(i), nc.NewRespInbox(), []byte(cfg)))
	}
	require.NoError(t, nc.Flush()) // the server has every request
	nc.Close()
	shutdown()
	require.Eventually(t, func() bool { return openStores() <= before }, 5*time.Second, 10*time.Millisecond,
		"streams left running")
}

// TestEmbeddedShutdownLeavesNoStream: streams a client asked for just before the server stops
// (a relay's requests, left behind by a natter that is stopping) are created and stopped with
// the server, or never created; none is left running for the rest of the process, its store
// ticking and its files open. Not parallel: it counts the stores of the whole process.
func TestEmbeddedShutdownLeavesNoStream(t *testing.T) {
	before := openStores()
	emb, err := streams.StartEmbedded(streams.EmbeddedConfig{StoreDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	nc, err := emb.Connect("test")
	require.NoError(t, err)
	requireNoStoreLeftAfter(t, before, nc, 50, 1, emb.Shutdown)
}
