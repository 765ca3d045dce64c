package push_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/push"
	"github.com/natterchat/natter/realtime/push/pushtest"
	"github.com/natterchat/natter/server"
)

// TestPushShutdown stops a deliverer while a push is in flight and another waits in the queue:
// the one in flight still goes out, the queued one is dropped, and Run returns.
func TestPushShutdown(t *testing.T) {
	t.Parallel()
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.PushPolicy = outbound.PublicOrLoopback }))
	_, err := push.EnsureKey(t.Context(), h.Store)
	require.NoError(t, err)
	svc := pushtest.New(t)
	ada, bob := h.NewUser(t), h.NewUser(t)
	ws := persisttest.Workspace(t, h.Store, ada.User.ID)
	persisttest.Member(t, h.Store, ws.ID, bob.User.ID, persist.RoleMember)
	register(t, h.Store, bob, svc.NewDevice(t), "phone")
	dm := persisttest.DM(t, h.Store, ws.ID, ada.User.ID, bob.User.ID)

	held, release := make(chan push.Push, 1), make(chan struct{})
	done, queued := make(chan pushDone, 16), make(chan push.Push, 16)
	d, err := push.New(push.Config{Store: h.Store, NATS: h.NATS, Logger: slog.New(slog.DiscardHandler),
		Policy: outbound.PublicOrLoopback, RootCAs: svc.RootCAs, Workers: 1, DiscoverInterval: 50 * time.Millisecond,
		BeforeSend: func(p push.Push) {
			select {
			case held <- p:
				<-release
			default: // only the first push is held
			}
		},
		OnQueued: func(p push.Push) { queued <- p },
		OnDone:   func(p push.Push, o push.Outcome) { done <- pushDone{p, o} }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-stopped
	})

	post := func(body string) string {
		r := h.Post(t, "/api/dms/"+dm+"/messages", ada.Token, map[string]any{"body": body})
		r.RequireStatus(t, http.StatusCreated)
		return r.JSON(t)["message"].(map[string]any)["id"].(string)
	}
	first := post("in flight")
	select {
	case p := <-held:
		require.Equal(t, first, p.MessageID)
	case <-time.After(10 * time.Second):
		t.Fatal("the first push never reached the worker")
	}
	second := post("queued")
	for _, want := range []string{first, second} {
		select {
		case p := <-queued:
			require.Equal(t, want, p.MessageID)
		case <-time.After(10 * time.Second):
			t.Fatal("the push was not queued")
		}
	}
	cancel()
	close(release)
	outcomes := map[string]push.Outcome{}
	for range 2 {
		select {
		case o := <-done:
			outcomes[o.push.MessageID] = o.outcome
		case <-time.After(10 * time.Second):
			t.Fatal("missing outcome")
		}
	}
	require.Equal(t, "delivered", outcomes[first].Result, "a push in flight finishes within the grace period")
	require.Equal(t, push.DropShutdown, outcomes[second].Dropped)
	require.Equal(t, first, svc.Next(t).Payload.Tag)
	select {
	case err := <-stopped:
		require.NoError(t, err)
		stopped <- err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
}
