package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
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

// Embedded is a running in-process NATS server with JetStream.
type Embedded struct {
	srv *natsserver.Server
}

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
			return nil, fmt.Errorf("--nats-listen %q: %w", cfg.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil || p < -1 || p > 65535 {
			return nil, fmt.Errorf("--nats-listen %q: port must be a number", cfg.Listen)
		}
		opts.Host, opts.Port = host, p
	}
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
	return &Embedded{srv: srv}, nil
}

// Connect opens a client connection in-process (no socket needed).
func (e *Embedded) Connect(name string) (*nats.Conn, error) {
	return nats.Connect("", nats.Name(name), nats.InProcessServer(e.srv), nats.MaxReconnects(-1))
}

// ClientURL is the listener's URL, or "" when the server does not listen.
func (e *Embedded) ClientURL() string {
	if e.srv.Addr() == nil {
		return ""
	}
	return e.srv.ClientURL()
}

// Server exposes the server for bot authentication wiring in this package.
func (e *Embedded) Server() *natsserver.Server { return e.srv }

// Shutdown stops the server and waits for it.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// ConnectURL connects to an external NATS server or cluster, waiting up to the context's
// deadline for the first connection; later disconnects reconnect forever.
func ConnectURL(ctx context.Context, url, name string) (*nats.Conn, error) {
	deadline, ok := ctx.Deadline()
	timeout := 10 * time.Second
	if ok {
		timeout = time.Until(deadline)
	}
	nc, err := nats.Connect(url, nats.Name(name), nats.Timeout(timeout), nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(false))
	if err != nil {
		return nil, fmt.Errorf("connect to nats at %s: %w", url, err)
	}
	return nc, nil
}

// natsLogger routes the server's logging into slog.
type natsLogger struct{ l *slog.Logger }

func (n *natsLogger) Noticef(format string, v ...any) { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Warnf(format string, v ...any)   { n.l.Warn(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Fatalf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Errorf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Debugf(format string, v ...any)  { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Tracef(format string, v ...any)  { n.l.Debug(fmt.Sprintf(format, v...)) }
