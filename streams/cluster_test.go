package streams_test

import (
	"log/slog"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
)

// TestClusterStreamReplicas: on a 3-node cluster a relay configured for 3 replicas creates
// workspace streams with 3, and scales up a stream an earlier single-replica deployment made,
// without losing its events.
func TestClusterStreamReplicas(t *testing.T) {
	t.Parallel()
	lc, err := streams.StartLocalCluster(streams.LocalClusterConfig{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
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
	replicasOf := func() int {
		s, err := js.Stream(t.Context(), streams.StreamName(b.ws.ID))
		require.NoError(t, err)
		return s.CachedInfo().Config.Replicas
	}

	b.appendEvents(t, 3, persist.EventInput{})
	// A stream creation or publish that times out while a loaded cluster settles is retried
	// at the relay's next poll, so both relays poll often.
	single, _, stop := b.start(t, func(c *streams.RelayConfig) { c.Replicas = 1; c.PollInterval = 200 * time.Millisecond })
	single.waitFor(t, 3)
	stop()
	require.Equal(t, 1, replicasOf())

	b.appendEvents(t, 2, persist.EventInput{})
	three, _, _ := b.start(t, func(c *streams.RelayConfig) { c.Replicas = 3; c.PollInterval = 200 * time.Millisecond })
	// The first publish after scaling may go unanswered while the new peers join.
	three.waitFor(t, 5)
	require.Equal(t, 3, replicasOf(), "the existing stream is scaled to 3 replicas")
	b.requireMirror(t)

	other := &relayBundle{store: store, nc: nc, js: js, owner: owner, ws: persisttest.Workspace(t, store, owner.ID)}
	other.appendEvents(t, 1, persist.EventInput{})
	require.Eventually(t, func() bool {
		s, err := js.Stream(t.Context(), streams.StreamName(other.ws.ID))
		return err == nil && s.CachedInfo().Config.Replicas == 3
	}, 20*time.Second, 50*time.Millisecond, "a new workspace's stream has 3 replicas")
}

// TestClusterExampleConfig: the top-level nats.conf is a configuration nats-server accepts,
// with JetStream, a 3-node cluster, natter's accounts and the auth callout naming natter's
// issuer key.
func TestClusterExampleConfig(t *testing.T) {
	issuer, err := nkeys.CreateAccount()
	require.NoError(t, err)
	pub, _ := issuer.PublicKey()
	t.Setenv("NATS_SERVER_NAME", "nats-2")
	t.Setenv("NATTER_NATS_PASSWORD", "natter-secret")
	t.Setenv("NATTER_NATS_SYSTEM_PASSWORD", "system-secret")
	t.Setenv("NATTER_CALLOUT_ISSUER", pub)
	opts, err := natsserver.ProcessConfigFile("../nats.conf")
	require.NoError(t, err)
	require.Equal(t, "nats-2", opts.ServerName)
	require.True(t, opts.JetStream)
	require.Equal(t, "natter", opts.Cluster.Name)
	require.Len(t, opts.Routes, 3)
	require.Equal(t, "SYS", opts.SystemAccount)
	require.NotNil(t, opts.AuthCallout)
	require.Equal(t, pub, opts.AuthCallout.Issuer)
	require.Equal(t, "NATTER", opts.AuthCallout.Account)
	require.ElementsMatch(t, []string{"natter", "natter_system"}, opts.AuthCallout.AuthUsers)
	users := map[string]string{}
	for _, u := range opts.Users {
		users[u.Username] = u.Account.Name
	}
	require.Equal(t, map[string]string{"natter": "NATTER", "natter_system": "SYS"}, users)
}
