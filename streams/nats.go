package streams

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natterchat/natter/persist"
)

// EmbeddedConfig configures the in-process NATS server of single-node mode.
type EmbeddedConfig struct {
	// StoreDir holds JetStream's files. Required.
	StoreDir string
	// Listen is the client listener for bot runtimes, host:port; "" keeps the server off the
	// network (natter itself connects in-process). Default "".
	Listen string
	// Logger receives the server's notices. Default slog.Default().
	Logger *slog.Logger
	// ReadyTimeout bounds start-up. Default 10s.
	ReadyTimeout time.Duration
}

// Embedded is a running in-process NATS server with JetStream. Every client authenticates:
// natter's own connections (Connect) with a token that never leaves the process, bot runtimes
// with their ccb_ token once a BotAccess admits them; anyone else is refused.
type Embedded struct {
	srv      *natsserver.Server
	storeDir string
	internal string // natter's own token
	bots     atomic.Pointer[BotAccess]
}

// Check is the server's authentication of every client connection (natsserver.Authentication).
func (e *Embedded) Check(c natsserver.ClientAuthentication) bool {
	token := c.GetOpts().Token
	if token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(e.internal)) == 1 {
		c.RegisterUser(&natsserver.User{Username: internalUser}) // no permissions: everything
		return true
	}
	if b := e.bots.Load(); b != nil && strings.HasPrefix(token, persist.PrefixBotToken) {
		return b.authenticate(c, token)
	}
	return false
}

// internalUser names natter's own connections.
const internalUser = "natter"

// StartEmbedded starts the server and waits until it accepts connections.
func StartEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("streams: EmbeddedConfig.StoreDir is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 10 * time.Second
	}
	opts := &natsserver.Options{
		ServerName: "natter-embedded",
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		NoSigs:     true,
		NoLog:      false,
		DontListen: cfg.Listen == "",
		// The HTTP monitor and cluster ports stay closed; bots get only the client listener.
		HTTPPort: 0,
	}
	if cfg.Listen != "" {
		host, port, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("nats listen address %q: %w", cfg.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < -1 || p > 65535 {
			return nil, fmt.Errorf("nats listen address %q: port must be a number", cfg.Listen)
		}
		opts.Host, opts.Port = host, p
	}
	e := &Embedded{internal: randomToken()}
	opts.CustomClientAuthentication = e
	srv, err := natsserver.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	srv.SetLoggerV2(&natsLogger{l: cfg.Logger.With("component", "nats")}, false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(cfg.ReadyTimeout) {
		srv.Shutdown()
		return nil, fmt.Errorf("embedded nats did not become ready within %s", cfg.ReadyTimeout)
	}
	e.srv, e.storeDir = srv, cfg.StoreDir
	return e, nil
}

// randomToken returns natter's own credential for a server run.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "natter_" + base64.RawURLEncoding.EncodeToString(b)
}

// Connect opens a client connection in-process (no socket needed).
func (e *Embedded) Connect(name string) (*nats.Conn, error) {
	return nats.Connect("", nats.Name(name), nats.InProcessServer(e.srv), nats.MaxReconnects(-1), nats.Token(e.internal))
}

// ClientURL is the listener's URL, or "" when the server does not listen.
func (e *Embedded) ClientURL() string {
	if e.srv.Addr() == nil {
		return ""
	}
	return e.srv.ClientURL()
}

// TrustedURL is the listener's URL carrying natter's own credentials, for another natter process
// that uses this server as its external cluster (tests of replicas); "" when the server does not
// listen. It is a secret: never log it.
func (e *Embedded) TrustedURL() string {
	u := e.ClientURL()
	if u == "" {
		return ""
	}
	return strings.Replace(u, "nats://", "nats://"+e.internal+"@", 1)
}

// Server exposes the server for bot authentication wiring in this package.
func (e *Embedded) Server() *natsserver.Server { return e.srv }

// Shutdown stops the server and waits for it. The JetStream API requests it holds are served
// first (for at most apiDrain): nats-server stops the streams it knows of, and a stream whose
// creation was under way meanwhile (the relay's request, left behind by a natter that is
// stopping) would run on for the rest of the process, its store ticking and its files open.
func (e *Embedded) Shutdown() {
	for deadline := time.Now().Add(apiDrain); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if js, err := e.srv.Jsz(&natsserver.JSzOptions{}); err != nil || js.API.Inflight == 0 {
			break
		}
	}
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// apiDrain bounds how long Shutdown waits for the JetStream API requests in flight.
const apiDrain = 5 * time.Second

// ConnectURL connects to an external NATS server or cluster, waiting up to the context's
// deadline for the first connection; later disconnects reconnect forever.
func ConnectURL(ctx context.Context, urls, name string) (*nats.Conn, error) {
	deadline, ok := ctx.Deadline()
	timeout := 10 * time.Second
	if ok {
		timeout = time.Until(deadline)
	}
	nc, err := nats.Connect(urls, nats.Name(name), nats.Timeout(timeout), nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(false))
	if err != nil {
		return nil, fmt.Errorf("connect to nats at %s: %w", RedactURLs(urls), err)
	}
	return nc, nil
}

// RedactURLs hides the credentials of a comma-separated list of NATS URLs, for messages and logs.
func RedactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
		if u, err := url.Parse(parts[i]); err == nil && u.User != nil {
			u.User = url.User("redacted")
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}

// natsLogger routes the server's logging into slog.
type natsLogger struct{ l *slog.Logger }

func (n *natsLogger) Noticef(format string, v ...any) { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Warnf(format string, v ...any)   { n.l.Warn(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Fatalf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Errorf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Debugf(format string, v ...any)  { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Tracef(format string, v ...any)  { n.l.Debug(fmt.Sprintf(format, v...)) }
