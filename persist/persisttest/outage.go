package persisttest

import (
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/natterchat/natter/persist"
)

// Outage is a proxy between a test's store and its database that the test can cut, which to the
// store looks like a stopped Postgres: open connections drop and new ones are refused. Restore
// lets connections through again on the same address.
type Outage struct {
	t       testing.TB
	network string
	addr    string // where the store connects
	target  string // where the database listens

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// WithOutage routes the store through a proxy the test controls (see Outage).
func WithOutage(t testing.TB) (Option, *Outage) {
	t.Helper()
	o := &Outage{t: t, conns: map[net.Conn]struct{}{}}
	return func(c *persist.Config) { c.URL = o.route(c.URL) }, o
}

// route starts the proxy in front of the database of raw and returns the URL that goes through it.
func (o *Outage) route(raw string) string {
	o.t.Helper()
	cfg, err := pgx.ParseConfig(raw)
	if err != nil {
		o.t.Fatalf("outage proxy: %v", err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		o.t.Fatalf("outage proxy: %v", err)
	}
	q := u.Query()
	if filepath.IsAbs(cfg.Host) { // a Unix socket directory
		// A short directory of our own: socket paths are limited to about 100 bytes.
		dir, err := os.MkdirTemp("", "pgout")
		if err != nil {
			o.t.Fatalf("outage proxy: %v", err)
		}
		o.t.Cleanup(func() { _ = os.RemoveAll(dir) })
		name := ".s.PGSQL." + itoa(int(cfg.Port))
		o.network, o.addr, o.target = "unix", filepath.Join(dir, name), filepath.Join(cfg.Host, name)
		q.Set("host", dir)
		u.Host = ""
	} else {
		o.network, o.target = "tcp", net.JoinHostPort(cfg.Host, itoa(int(cfg.Port)))
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			o.t.Fatalf("outage proxy: %v", err)
		}
		o.addr = ln.Addr().String()
		_ = ln.Close()
		q.Del("host")
		u.Host = o.addr
	}
	u.RawQuery = q.Encode()
	o.Restore()
	o.t.Cleanup(o.Cut)
	return u.String()
}

// itoa formats a port, pgx's zero meaning the default.
func itoa(port int) string {
	if port == 0 {
		port = 5432
	}
	return strconv.Itoa(port)
}

// Cut drops every proxied connection and refuses new ones until Restore.
func (o *Outage) Cut() {
	o.mu.Lock()
	if o.ln != nil {
		_ = o.ln.Close()
		o.ln = nil
	}
	for c := range o.conns {
		_ = c.Close()
	}
	o.mu.Unlock()
	o.wg.Wait()
}

// Restore accepts connections again.
func (o *Outage) Restore() {
	o.t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ln != nil {
		return
	}
	if o.network == "unix" {
		_ = os.Remove(o.addr)
	}
	ln, err := net.Listen(o.network, o.addr)
	if err != nil {
		o.t.Fatalf("outage proxy: %v", err)
	}
	o.ln = ln
	o.wg.Add(1)
	go o.accept(ln)
}

func (o *Outage) accept(ln net.Listener) {
	defer o.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		d, err := net.Dial(o.network, o.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		o.mu.Lock()
		if o.ln != ln { // cut meanwhile
			o.mu.Unlock()
			_ = c.Close()
			_ = d.Close()
			return
		}
		o.conns[c], o.conns[d] = struct{}{}, struct{}{}
		o.mu.Unlock()
		o.wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer o.wg.Done()
			_, _ = io.Copy(dst, src)
			_ = dst.Close()
			_ = src.Close()
			o.mu.Lock()
			delete(o.conns, dst)
			delete(o.conns, src)
			o.mu.Unlock()
		}
		go pipe(c, d)
		go pipe(d, c)
	}
}
