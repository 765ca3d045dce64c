package admin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/persist/pglocal"
	"github.com/natterchat/natter/streams"
)

// clusterCommand runs cluster mode on one machine, for trying it and for tests: the nodes of
// a NATS JetStream cluster (the real nats-server of go.mod, in this process), natter replicas
// that share it and the private PostgreSQL, all on loopback.
func clusterCommand() *cli.Command {
	return &cli.Command{
		Name: "cluster",
		Usage: "run a local cluster: 3 NATS JetStream nodes (with the auth callout for bots), 3 natter replicas " +
			"and a private PostgreSQL, on 127.0.0.1; prints their URLs and stops them all on Ctrl-C",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data-dir", EnvVars: []string{"NATTER_CLUSTER_DATA_DIR"}, Value: "./data/cluster",
				Usage: "directory for the private PostgreSQL, the NATS nodes' configs and stores, and uploads"},
			&cli.IntFlag{Name: "replicas", EnvVars: []string{"NATTER_CLUSTER_REPLICAS"}, Value: 3,
				Usage: "natter replicas to run (1 to 9)"},
			&cli.IntFlag{Name: "nats-nodes", EnvVars: []string{"NATTER_CLUSTER_NATS_NODES"}, Value: 3,
				Usage: "NATS nodes to run (1 to 9); workspace streams get min(3, nodes) replicas"},
			&cli.IntFlag{Name: "base-port", EnvVars: []string{"NATTER_CLUSTER_BASE_PORT"}, Value: 8081,
				Usage: "replica i listens on 127.0.0.1:base-port+i; 0 picks free ports"},
			&cli.IntFlag{Name: "nats-base-port", EnvVars: []string{"NATTER_CLUSTER_NATS_BASE_PORT"},
				Usage: "NATS node i's client port is nats-base-port+i and its route port nats-base-port+nats-nodes+i; 0 picks free ports"},
			&cli.BoolFlag{Name: "processes", EnvVars: []string{"NATTER_CLUSTER_PROCESSES"},
				Usage: "run each replica as a `natter serve` child process (its own descriptor limit and memory) instead of in this process"},
			&cli.DurationFlag{Name: "stream-idle", EnvVars: []string{"NATTER_STREAM_IDLE"}, Value: 15 * time.Minute,
				Usage: "each replica's --stream-idle: a workspace stream idle this long is retired"},
			&cli.IntFlag{Name: "max-sockets-per-user", EnvVars: []string{"NATTER_MAX_SOCKETS_PER_USER"}, Value: 64,
				Usage: "each replica's --max-sockets-per-user (raise it to natter bench --sockets)"},
		},
		Action: runCluster,
	}
}

func runCluster(c *cli.Context) error {
	replicas, nodes, basePort := c.Int("replicas"), c.Int("nats-nodes"), c.Int("base-port")
	if replicas < 1 || replicas > 9 {
		return configError("replicas", "must be 1 to 9, not %d", replicas)
	}
	if nodes < 1 || nodes > 9 {
		return configError("nats-nodes", "must be 1 to 9, not %d", nodes)
	}
	if basePort < 0 || basePort+replicas > 65536 {
		return configError("base-port", "must leave room for %d ports below 65536", replicas)
	}
	if natsPort := c.Int("nats-base-port"); natsPort < 0 || natsPort+2*nodes > 65536 {
		return configError("nats-base-port", "must leave room for %d ports below 65536", 2*nodes)
	}
	ctx := c.Context
	logger := newLogger(c)
	dir, err := filepath.Abs(c.String("data-dir"))
	if err != nil {
		return err
	}
	// Readable by others: the private PostgreSQL may run as an unprivileged user (see runServer).
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create --data-dir: %w", err)
	}
	pg, err := pglocal.Open(ctx, pglocal.Config{Dir: filepath.Join(dir, "pg"), Durable: true,
		// Each replica pools up to 32 connections, plus its locks; room for the admin commands too.
		MaxConnections: max(200, 64+40*replicas), Logger: logger})
	if err != nil {
		return err
	}
	defer func() { _ = pg.Stop(context.WithoutCancel(ctx)) }()
	if err := ensureDatabase(ctx, pg.URL("postgres"), databaseName); err != nil {
		return err
	}
	nats, err := streams.StartLocalCluster(streams.LocalClusterConfig{Dir: filepath.Join(dir, "nats"), Nodes: nodes,
		Logger: logger, EncryptCallout: true, BasePort: c.Int("nats-base-port")})
	if err != nil {
		return err
	}
	defer nats.Shutdown()

	out := c.App.Writer
	g, gctx := errgroup.WithContext(ctx)
	urls := make([]string, replicas)
	for i := range replicas {
		addr := "127.0.0.1:0"
		if basePort > 0 {
			addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(basePort+i))
		}
		args := []string{"natter", "serve", "--database-url", pg.URL(databaseName), "--addr", addr,
			"--data-dir", filepath.Join(dir, fmt.Sprintf("natter-%d", i+1)), "--upload-dir", filepath.Join(dir, "uploads"),
			"--nats-url", nats.NatterURLs(), "--stream-replicas", strconv.Itoa(min(3, nodes)),
			"--nats-callout-issuer-seed", nats.IssuerSeed, "--nats-callout-xkey-seed", nats.XKeySeed,
			"--nats-system-url", nats.SystemURLs(),
			"--max-sockets-per-user", strconv.Itoa(c.Int("max-sockets-per-user")), "--stream-idle", c.Duration("stream-idle").String(),
			"--dev-bootstrap", "--dev-auth", "--callback-allow-loopback", "--access-log=false"}
		listening := make(chan string, 1)
		stdout := &lineWatcher{prefix: "natter listening on ", found: listening}
		stderr := &prefixWriter{prefix: fmt.Sprintf("[natter-%d] ", i+1), w: c.App.ErrWriter}
		g.Go(func() error {
			var err error
			if c.Bool("processes") {
				err = runReplicaProcess(gctx, args[1:], stdout, stderr)
			} else {
				err = Run(gctx, args, stdout, stderr)
			}
			if err != nil {
				err = fmt.Errorf("natter-%d: %w", i+1, err)
			}
			return err
		})
		select {
		case urls[i] = <-listening:
		case <-gctx.Done():
			return g.Wait()
		}
	}
	fmt.Fprintf(out, "natter cluster is up (Ctrl-C, or SIGTERM to pid %d, stops everything)\n", os.Getpid())
	for i, u := range urls {
		fmt.Fprintf(out, "  natter-%d      %s\n", i+1, u)
	}
	fmt.Fprintf(out, "  nats          %s  (bots: nats.Token(ccb_…), inbox prefix _INBOX.<token id>)\n", nats.ClientURLs())
	owner := "stopped with the cluster"
	if !pg.Started() {
		owner = "already running: left running"
	}
	fmt.Fprintf(out, "  postgres      %s  (pid %d, %s)\n", pg.URL(databaseName), pg.PID(), owner)
	fmt.Fprintf(out, "  try: natter bench --url %s\n", strings.Join(urls, " --url "))
	return g.Wait()
}

// runReplicaProcess runs `natter <args>` as a child process until ctx ends, then stops it as
// an operator would (SIGTERM, then SIGKILL after 30 s).
func runReplicaProcess(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		return nil // stopped with the cluster
	}
	return err
}

// lineWatcher passes the rest of the first line starting with prefix to found.
type lineWatcher struct {
	prefix string
	found  chan<- string
	mu     sync.Mutex
	buf    []byte
	done   bool
}

func (l *lineWatcher) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return len(p), nil
	}
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(l.buf[:i])
		l.buf = l.buf[i+1:]
		if rest, ok := strings.CutPrefix(line, l.prefix); ok {
			l.found <- rest
			l.done, l.buf = true, nil
			return len(p), nil
		}
	}
}

// prefixWriter writes each line of a replica's log with the replica's name in front.
type prefixWriter struct {
	prefix string
	w      io.Writer
	mu     sync.Mutex
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := io.WriteString(p.w, p.prefix+string(p.buf[:i+1])); err != nil {
			return 0, err
		}
		p.buf = p.buf[i+1:]
	}
}
