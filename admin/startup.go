package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/streams"
)

// Back-off of the database connection at start-up: 1s, doubling to 30s.
const (
	dbRetryMin = time.Second
	dbRetryMax = 30 * time.Second
)

// openDatabaseWaiting is openDatabase for a server whose database may not be up yet (a host's
// boot order, a database restarting): an unreachable database is tried again with back-off,
// each try logged, until it answers or ctx ends; a refusal (bad credentials, no such database,
// a newer schema) fails at once. Meanwhile ln answers with server.Starting, so /readyz says 503;
// the listener returned takes over ln's connections for the real server.
func openDatabaseWaiting(ctx context.Context, open func() (*database, error), ln net.Listener, logger *slog.Logger) (*database, net.Listener, error) {
	sw := newConnSwitch(ln)
	starting := &http.Server{Handler: server.Starting(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	startLn := sw.next()
	served := make(chan struct{})
	go func() { defer close(served); _ = starting.Serve(startLn) }()
	stopStarting := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = starting.Shutdown(sctx)
		<-served
	}
	began, wait := time.Now(), dbRetryMin
	for attempt := 1; ; attempt++ {
		db, err := open()
		if err == nil {
			logger.Info("database connected", "attempts", attempt, "waited_ms", time.Since(began).Milliseconds())
			real := sw.next() // before the start-up server stops, so no connection waits on nobody
			stopStarting()
			return db, real, nil
		}
		if !retryableAtStart(err) || ctx.Err() != nil {
			stopStarting()
			sw.stop()
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return nil, nil, err
		}
		logger.Warn("database not reachable; trying again", "attempt", attempt, "retry_in_ms", wait.Milliseconds(),
			"addr", ln.Addr().String(), "error", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		wait = min(2*wait, dbRetryMax)
	}
}

// retryableAtStart tells an outage, worth waiting out, from a refusal that waiting will not
// change: the server's refusals other than "cannot connect now" (such as bad credentials or no
// such database) are final.
func retryableAtStart(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return persist.Unreachable(pe)
	}
	return persist.Unreachable(err)
}

// connSwitch accepts ln's connections and hands each to the current one of a series of
// listeners: the start-up server's, then the real server's.
type connSwitch struct {
	ln   net.Listener
	mu   sync.Mutex
	cur  *switchedListener
	once sync.Once
}

func newConnSwitch(ln net.Listener) *connSwitch {
	s := &connSwitch{ln: ln}
	go s.pump()
	return s
}

// next makes a new listener current and returns it; the previous one gets no more connections.
func (s *connSwitch) next() net.Listener {
	l := &switchedListener{addr: s.ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{}), sw: s}
	s.mu.Lock()
	s.cur = l
	s.mu.Unlock()
	return l
}

// stop closes ln, ending the pump.
func (s *connSwitch) stop() { s.once.Do(func() { _ = s.ln.Close() }) }

func (s *connSwitch) pump() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		for delivered := false; !delivered; {
			s.mu.Lock()
			l := s.cur
			s.mu.Unlock()
			select {
			case l.conns <- c:
				delivered = true
			case <-l.done:
				s.mu.Lock()
				last := s.cur == l
				s.mu.Unlock()
				if last { // the current listener is closed: nobody will serve it
					_ = c.Close()
					delivered = true
				}
			}
		}
	}
}

// switchedListener is one listener of a connSwitch. Closing the last one closes the real
// listener.
type switchedListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	sw    *connSwitch
}

func (l *switchedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *switchedListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.sw.mu.Lock()
		last := l.sw.cur == l
		l.sw.mu.Unlock()
		if last {
			l.sw.stop()
		}
	})
	return nil
}

func (l *switchedListener) Addr() net.Addr { return l.addr }

// startupFacts are the fields of the one start-up line an operator reads first: the build, where
// the database and NATS are, and the addresses listened on. Credentials are never part of it.
func startupFacts(c *cli.Context, cfg serverConfig, ln net.Listener, metrics *metricsListener) []any {
	postgres := "private cluster in " + filepath.Join(c.String("data-dir"), "pg")
	if u := c.String("database-url"); u != "" {
		postgres = "unparsable URL"
		if pc, err := pgconn.ParseConfig(u); err == nil {
			postgres = fmt.Sprintf("%s:%d/%s", pc.Host, pc.Port, pc.Database)
		}
	}
	nats := "embedded"
	if cfg.natsURL != "" {
		nats = "external " + streams.RedactURLs(cfg.natsURL)
	}
	facts := []any{"version", BuildVersion(), "postgres", postgres, "nats", nats, "addr", ln.Addr().String()}
	if metrics != nil {
		facts = append(facts, "metrics_addr", metrics.ln.Addr().String())
	}
	if cfg.natsListen != "" {
		facts = append(facts, "nats_listen", cfg.natsListen)
	}
	return facts
}
