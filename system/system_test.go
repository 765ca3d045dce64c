package system

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/push"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/streams"
	"github.com/natterchat/natter/streams/streamstest"
)

// config is a system over a fresh database and embedded NATS, as the harnesses build it.
func config(t *testing.T) Config {
	t.Helper()
	emb, nc := streamstest.Embedded(t)
	store := persisttest.NewStore(t, func(c *persist.Config) { *c = streams.StoreConfig(nc, *c) })
	return Config{Store: store, NATS: nc, Embedded: emb, Logger: slog.New(slog.DiscardHandler),
		Server: server.Config{ShutdownTimeout: time.Second}}
}

// run starts s on a loopback listener; the returned stop cancels it and gives Run's result.
func run(t *testing.T, s *System) (url string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln) }()
	var once bool
	var result error
	stop = func() error {
		if !once {
			once = true
			cancel()
			result = <-done
		}
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return "http://" + ln.Addr().String(), stop
}

func get(t *testing.T, url string) int {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	return res.StatusCode
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	_, err := New(context.Background(), Config{})
	require.ErrorContains(t, err, "Store and Config.NATS are required")

	cfg := config(t)
	cfg.Callout = &streams.AuthCalloutConfig{}
	_, err = New(context.Background(), cfg)
	require.ErrorContains(t, err, "embedded server admits bots itself")

	cfg = config(t)
	cfg.Server.PublicURL = "ftp://chat.example.com"
	_, err = New(context.Background(), cfg)
	var ce *ServerConfigError
	require.ErrorAs(t, err, &ce, "the server's refusal is the caller's configuration error")
}

// TestRunServesThenDrains: the API answers, with the relay's health among the readiness checks;
// at the end the server stops accepting before the other components are told to stop, and a
// clean stop returns nil.
func TestRunServesThenDrains(t *testing.T) {
	t.Parallel()
	s, err := New(context.Background(), config(t))
	require.NoError(t, err)
	require.NotNil(t, s.Bots, "the embedded server admits bots")
	require.Nil(t, s.Push, "push is off without Config.Push")
	servingAtStop := make(chan bool, 1)
	var addr string
	s.add("probe", func(ctx context.Context) error {
		<-ctx.Done()
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		servingAtStop <- err == nil
		return nil
	})
	url, stop := run(t, s)
	addr = url[len("http://"):]
	require.Equal(t, http.StatusOK, get(t, url+"/healthz"))
	require.Equal(t, http.StatusOK, get(t, url+"/readyz"))
	require.NoError(t, stop())
	require.False(t, <-servingAtStop, "a component was stopped while the server still accepted")
}

// TestComponentFailureStopsAll: one component's failure stops the server and the others, and is
// Run's error, named after the component.
func TestComponentFailureStopsAll(t *testing.T) {
	t.Parallel()
	s, err := New(context.Background(), config(t))
	require.NoError(t, err)
	boom := errors.New("boom")
	fail := make(chan struct{})
	s.add("failing part", func(ctx context.Context) error {
		select {
		case <-fail:
			return boom
		case <-ctx.Done():
			return nil
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background(), ln) }()
	require.Equal(t, http.StatusOK, get(t, "http://"+ln.Addr().String()+"/healthz"))
	close(fail)
	select {
	case err := <-done:
		require.ErrorIs(t, err, boom)
		require.ErrorContains(t, err, "failing part: boom")
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not stop after a component failed")
	}
	_, err = net.DialTimeout("tcp", ln.Addr().String(), time.Second)
	require.Error(t, err, "the server still accepts")
}

// TestPushFollowsConfig: Config.Push runs the deliverer and its sweep after making the key pair;
// Server.DisableWebPush keeps them off even with Config.Push.
func TestPushFollowsConfig(t *testing.T) {
	t.Parallel()
	cfg := config(t)
	cfg.Push = &push.Config{}
	s, err := New(context.Background(), cfg)
	require.NoError(t, err)
	require.NotNil(t, s.Push)
	require.NotNil(t, s.PushSweeper)
	ok, err := persist.WithTxV(context.Background(), cfg.Store, func(tx *persist.Tx) (bool, error) {
		_, ok, err := tx.PushKeyCurrent(context.Background())
		return ok, err
	})
	require.NoError(t, err)
	require.True(t, ok, "no push key pair was made")

	cfg = config(t)
	cfg.Push = &push.Config{}
	cfg.Server.DisableWebPush = true
	s, err = New(context.Background(), cfg)
	require.NoError(t, err)
	require.Nil(t, s.Push)
	require.Nil(t, s.PushSweeper)
}

// TestComponentLoggerKept: a component's own logger wins over the system's, as the tests that
// read the server's log rely on.
func TestComponentLoggerKept(t *testing.T) {
	t.Parallel()
	cfg := config(t)
	var seen atomic.Bool
	cfg.Server.Logger = slog.New(handlerFunc(func() { seen.Store(true) }))
	cfg.Server.AccessLog = true
	s, err := New(context.Background(), cfg)
	require.NoError(t, err)
	url, stop := run(t, s)
	require.Equal(t, http.StatusOK, get(t, url+"/healthz"))
	require.NoError(t, stop())
	require.True(t, seen.Load(), "the server's own logger got nothing")
}

// handlerFunc is a slog handler that calls f on each record.
type handlerFunc func()

func (f handlerFunc) Enabled(context.Context, slog.Level) bool  { return true }
func (f handlerFunc) Handle(context.Context, slog.Record) error { f(); return nil }
func (f handlerFunc) WithAttrs([]slog.Attr) slog.Handler        { return f }
func (f handlerFunc) WithGroup(string) slog.Handler             { return f }
