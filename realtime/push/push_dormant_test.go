package push_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/realtime/push"
	"github.com/natterchat/natter/streams"
)

// TestPushFollowsAWorkspaceWhileItsStreamExists: when the relay retires an idle workspace's
// stream, push's consumer goes with it (nothing of push is left on a dormant workspace), and the
// workspace's next message, which creates the stream again, is pushed. The re-list is off (an
// hour), so the stream-created advisory alone brings push back.
func TestPushFollowsAWorkspaceWhileItsStreamExists(t *testing.T) {
	t.Parallel()
	w := newPushWorld(t, func(c *push.Config) { c.DiscoverInterval = time.Hour },
		servertest.WithRelay(func(c *streams.RelayConfig) { c.RetireAfter = 300 * time.Millisecond }))
	dm := w.dm(t, w.ada, w.bob)
	first := w.post(t, w.ada, "/api/dms/"+dm+"/messages", "before the rest")
	require.Equal(t, first, w.svc.Next(t).Payload.Tag)
	require.Equal(t, "delivered", w.next(t).outcome.Result)

	js, err := jetstream.New(w.h.NATS)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := js.Stream(context.Background(), streams.StreamName(w.ws.ID))
		return errors.Is(err, jetstream.ErrStreamNotFound)
	}, 10*time.Second, 20*time.Millisecond, "the idle stream was not retired under push's consumer")

	woken := w.post(t, w.ada, "/api/dms/"+dm+"/messages", "after the rest")
	require.Equal(t, woken, w.svc.Next(t).Payload.Tag)
	require.Equal(t, "delivered", w.next(t).outcome.Result)
}
