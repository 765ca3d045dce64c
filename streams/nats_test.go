package streams_test

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

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
