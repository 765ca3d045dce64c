package persist_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// pgProxy forwards TCP connections to the test Postgres until stopped, when it stops accepting
// and cuts every connection: the database, seen from the store, is gone.
type pgProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t *testing.T, raw string) (*pgProxy, string) {
	t.Helper()
	cfg, err := pgconn.ParseConfig(raw)
	require.NoError(t, err)
	network, addr := "tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	if strings.HasPrefix(cfg.Host, "/") {
		network, addr = "unix", cfg.Host+"/.s.PGSQL."+strconv.Itoa(int(cfg.Port))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &pgProxy{ln: ln}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial(network, addr)
			if err != nil {
				_ = in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
			go func() { _, _ = io.Copy(in, out); _ = in.Close() }()
		}
	}()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	q := u.Query()
	q.Del("host")
	q.Del("port")
	u.RawQuery = q.Encode()
	u.Host = ln.Addr().String()
	if cfg.User != "" {
		u.User = url.UserPassword(cfg.User, cfg.Password)
	}
	return p, u.String()
}

func (p *pgProxy) stop() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// TestDatabaseDownIsUnavailable: when the database cannot be reached, a transaction and a group
// commit fail at once with unavailable (503), not an internal error, and do not hang.
func TestDatabaseDownIsUnavailable(t *testing.T) {
	t.Parallel()
	proxy, proxied := startProxy(t, persisttest.URL(t))
	store, err := persist.Open(context.Background(), persist.Config{URL: proxied, MaxConns: 4, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error { _, err := tx.EventWindowGet(ctx, "wsp_none"); return ignoreNotFound(err) }))

	proxy.stop()
	err = store.WithTx(ctx, func(tx *persist.Tx) error { _, err := tx.EventWindowGet(ctx, "wsp_none"); return ignoreNotFound(err) })
	requireUnavailable(t, err)
	_, err = persist.BatchInPlace(ctx, store, persist.Place{ChannelID: "chn_none"}, func(tx *persist.Tx) (persist.MessageCreated, error) {
		return tx.MessageCreate(ctx, persist.Actor{UserID: "usr_none"}, persist.Place{ChannelID: "chn_none"}, persist.MessageCreateParams{Body: "hello"})
	})
	requireUnavailable(t, err)
	require.NoError(t, ctx.Err(), "answered before the deadline")
}

func ignoreNotFound(err error) error {
	if e, ok := persist.ErrorOf(err); ok && e.Code == persist.CodeNotFound {
		return nil
	}
	return err
}

func requireUnavailable(t *testing.T, err error) {
	t.Helper()
	e, ok := persist.ErrorOf(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, persist.CodeUnavailable, e.Code, "%v", err)
	require.Equal(t, 503, e.Status)
}
