package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/urfave/cli/v2"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/realtime"
	"github.com/natterchat/natter/realtime/push"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/streams"
	"github.com/natterchat/natter/system"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:   "serve",
		Usage:  "run Natter in production: explicit --database-url, embedded or external NATS, development features off",
		Flags:  serverFlags(false),
		Action: func(c *cli.Context) error { return runServer(c, false) },
	}
}

func devCommand() *cli.Command {
	return &cli.Command{
		Name: "dev",
		Usage: "run Natter for development: a private PostgreSQL under --data-dir, embedded NATS, dev bootstrap " +
			"(a local owner, a default workspace and #general) and local dev sign-in, on 127.0.0.1:8080",
		Flags:  serverFlags(true),
		Action: func(c *cli.Context) error { return runServer(c, true) },
	}
}

func serverFlags(dev bool) []cli.Flag {
	addr := ":8080"
	if dev {
		addr = "127.0.0.1:8080"
	}
	return append([]cli.Flag{
		&cli.StringFlag{Name: "addr", EnvVars: []string{"NATTER_ADDR"}, Value: addr,
			Usage: "host:port the HTTP API listens on"},
		databaseURLFlag(),
		dataDirFlag(),
		&cli.StringFlag{Name: "nats-url", EnvVars: []string{"NATTER_NATS_URL"},
			Usage: "URL(s) of an external NATS JetStream cluster, comma-separated; empty runs NATS embedded in this process"},
		&cli.StringFlag{Name: "nats-listen", EnvVars: []string{"NATTER_NATS_LISTEN"},
			Usage: "host:port on which the embedded NATS server accepts bot runtimes; empty keeps it off the network"},
		&cli.IntFlag{Name: "stream-replicas", EnvVars: []string{"NATTER_STREAM_REPLICAS"}, Value: 1,
			Usage: "replicas of each workspace's JetStream stream: 1 embedded, 3 in an external cluster"},
		&cli.DurationFlag{Name: "stream-idle", EnvVars: []string{"NATTER_STREAM_IDLE"}, Value: 15 * time.Minute,
			Usage: "how long a workspace's stream stays after its last event before it is retired (created again at the next event); 0 keeps every stream"},
		&cli.StringFlag{Name: "public-url", EnvVars: []string{"NATTER_PUBLIC_URL"},
			Usage: "the origin browsers use, such as https://chat.example.com (https unless loopback); sets accepted origins and Secure cookies"},
		&cli.BoolFlag{Name: "dev-bootstrap", EnvVars: []string{"NATTER_DEV_BOOTSTRAP"}, Value: dev,
			Usage: "create a local owner, default workspace and #general when none exist, and let local requests fall back to the first user"},
		&cli.BoolFlag{Name: "dev-auth", EnvVars: []string{"NATTER_DEV_AUTH"}, Value: dev,
			Usage: "local development sign-in: loopback clients may mint magic-link tokens through POST /api/auth/magic/request and act as any person with X-Natter-User"},
		&cli.BoolFlag{Name: "remote-avatars", EnvVars: []string{"NATTER_REMOTE_AVATARS"},
			Usage: "let the web client load avatars from other hosts (Gravatar for people without a picture, GitHub, any https avatar_url); off, it shows initials and its CSP allows images only from this server"},
		&cli.BoolFlag{Name: "metrics", EnvVars: []string{"NATTER_METRICS"},
			Usage: "serve Prometheus metrics at /metrics on --addr (prefer --metrics-addr, which keeps them off the public listener)"},
		&cli.StringFlag{Name: "metrics-addr", EnvVars: []string{"NATTER_METRICS_ADDR"},
			Usage: "host:port of a listener of its own serving Prometheus metrics at /metrics, such as 127.0.0.1:9090; empty: none"},
		&cli.StringFlag{Name: "cookie-namespace", EnvVars: []string{"NATTER_COOKIE_NAMESPACE"},
			Usage: "suffix for the session cookie name (cc_session_<namespace>) when deployments share a domain"},
		&cli.StringFlag{Name: "api-base-url", EnvVars: []string{"NATTER_API_BASE_URL"},
			Usage: "the trusted canonical API base bot installers store, such as https://chat.example.com (a path prefix is kept); setup codes give it as api_base_url and build claim_url on it (default: --public-url, else the request's scheme and host)"},
		&cli.BoolFlag{Name: "web-push", EnvVars: []string{"NATTER_WEB_PUSH"}, Value: true,
			Usage: "send Web Push notifications to registered devices (a server key pair is generated on first start); false turns push off: no key, no sends, and the push write endpoints answer 404"},
		&cli.BoolFlag{Name: "callback-allow-loopback", EnvVars: []string{"NATTER_CALLBACK_ALLOW_LOOPBACK"},
			Usage: "let slash-command and event-subscription callbacks reach 127.0.0.1 and ::1, for receivers on this machine (development, natter cluster); off in production"},
		&cli.StringFlag{Name: "pushover-token", EnvVars: []string{"NATTER_PUSHOVER_TOKEN"},
			Usage: "Pushover application token: people who enabled Pushover with a user key are notified through it on the same messages as web push (needs --web-push)"},
		&cli.BoolFlag{Name: "access-log", EnvVars: []string{"NATTER_ACCESS_LOG"}, Value: dev,
			Usage: "log one line per HTTP request (method, route pattern, status, duration)"},
		&cli.StringFlag{Name: "log-format", EnvVars: []string{"NATTER_LOG_FORMAT"}, Value: "text",
			Usage: "text (key=value lines) or json (one JSON object per line, for log pipelines)"},
		&cli.StringFlag{Name: "log-level", EnvVars: []string{"NATTER_LOG_LEVEL"}, Value: "info",
			Usage: "debug, info, warn or error: the least severe level logged"},
		&cli.IntFlag{Name: "max-sockets-per-user", EnvVars: []string{"NATTER_MAX_SOCKETS_PER_USER"}, Value: 64,
			Usage: "open realtime sockets one person, or one bot token, may hold on this server; more are refused with 429 before the upgrade"},
	}, append(append(append(signInFlags(), uploadFlags()...), calloutFlags()...), emailFlags()...)...)
}

// serverConfig is the validated configuration of serve and dev.
type serverConfig struct {
	streamReplicas int
	streamIdle     time.Duration
	addr           string
	natsURL        string
	natsListen     string
	pushoverToken  string
	socketsPerUser int
	server         server.Config
	signIn         signInConfig
	callout        calloutConfig
}

func readServerConfig(c *cli.Context, dev bool) (cfg serverConfig, err error) {
	cfg = serverConfig{addr: c.String("addr"), natsURL: c.String("nats-url"), natsListen: c.String("nats-listen"),
		streamReplicas: c.Int("stream-replicas"), streamIdle: c.Duration("stream-idle"), socketsPerUser: c.Int("max-sockets-per-user")}
	if cfg.socketsPerUser < 1 || cfg.socketsPerUser > 100000 {
		return cfg, configError("max-sockets-per-user", "must be 1 to 100000, not %d", cfg.socketsPerUser)
	}
	if cfg.streamIdle < 0 || (cfg.streamIdle > 0 && cfg.streamIdle < time.Second) {
		return cfg, configError("stream-idle", "must be 0 (keep every stream) or at least 1s, not %s", cfg.streamIdle)
	}
	if cfg.streamIdle == 0 {
		cfg.streamIdle = -1 // the relay's "never"
	}
	if cfg.streamReplicas < 1 || cfg.streamReplicas > 5 {
		return cfg, configError("stream-replicas", "must be 1 to 5 (1 for the embedded server, 3 in a cluster), not %d", cfg.streamReplicas)
	}
	cfg.pushoverToken = strings.TrimSpace(c.String("pushover-token"))
	if cfg.pushoverToken != "" && !push.ValidPushoverToken(cfg.pushoverToken) {
		return cfg, configError("pushover-token", "must be a Pushover application token (30 letters and digits)")
	}
	if cfg.pushoverToken != "" && !c.Bool("web-push") {
		return cfg, configError("pushover-token", "Pushover is sent by the push deliverer, which --web-push=false turns off")
	}
	if f := c.String("log-format"); f != "text" && f != "json" {
		return cfg, configError("log-format", "%q must be text or json", f)
	}
	if _, err := parseLogLevel(c.String("log-level")); err != nil {
		return cfg, configError("log-level", "%q must be debug, info, warn or error", c.String("log-level"))
	}
	if err := checkHostPort(cfg.addr); err != nil {
		return cfg, configError("addr", "%v", err)
	}
	if a := c.String("metrics-addr"); a != "" {
		if err := checkHostPort(a); err != nil {
			return cfg, configError("metrics-addr", "%v", err)
		}
	}
	if cfg.natsURL == "" && cfg.streamReplicas > 1 {
		return cfg, configError("stream-replicas", "the embedded NATS server is a single node and holds 1 replica; more need --nats-url of a cluster")
	}
	if err := checkDatabaseURL(c.String("database-url")); err != nil {
		return cfg, err
	}
	if !dev && c.String("database-url") == "" {
		return cfg, configError("database-url", "serve needs a database URL (NATTER_DATABASE_URL); use `natter dev` for a private database")
	}
	if cfg.natsURL != "" {
		if err := checkNATSURLs("nats-url", cfg.natsURL); err != nil {
			return cfg, err
		}
		if cfg.natsListen != "" {
			return cfg, configError("nats-listen", "only the embedded server listens; with --nats-url, bots connect to that cluster")
		}
	}
	if cfg.natsListen != "" {
		if err := checkHostPort(cfg.natsListen); err != nil {
			return cfg, configError("nats-listen", "%v", err)
		}
	}
	if p := c.String("public-url"); p != "" {
		if _, err := server.ParsePublicURL(p); err != nil {
			return cfg, usageErrorf("invalid configuration: %w", err) // the error names the flag
		}
	}
	if b := c.String("api-base-url"); b != "" {
		if _, err := server.ParseAPIBaseURL(b); err != nil {
			return cfg, usageErrorf("invalid configuration: %w", err) // the error names the flag
		}
	}
	if ns := c.String("cookie-namespace"); ns != "" && !server.ValidCookieNamespace(ns) {
		return cfg, configError("cookie-namespace", "%q may contain only letters, digits, '-' and '_' (at most 32)", ns)
	}
	if cfg.signIn, err = readSignInConfig(c); err != nil {
		return cfg, err
	}
	if cfg.callout, err = readCalloutConfig(c, cfg.natsURL); err != nil {
		return cfg, err
	}
	mail, err := readEmailConfig(c, true)
	if err != nil {
		return cfg, err
	}
	if c.String("upload-s3-endpoint") != "" {
		// Checked here, before anything touches the data dir; building the client has no side effect.
		if _, err := openUploads(c); err != nil {
			return cfg, err
		}
	}
	cfg.server = server.Config{
		PublicURL:    c.String("public-url"),
		Mail:         mail,
		DevBootstrap: c.Bool("dev-bootstrap"),
		DevAuth:      c.Bool("dev-auth"),
		// The impersonation header is a development shortcut like magic links by API.
		LocalImpersonation: c.Bool("dev-auth"),
		Metrics:            c.Bool("metrics"),
		RemoteAvatars:      c.Bool("remote-avatars"),
		CookieNamespace:    c.String("cookie-namespace"),
		AccessLog:          c.Bool("access-log"),
		APIBaseURL:         c.String("api-base-url"),
		PasswordAuth:       c.Bool("password-auth"),
		IdentityProxy:      cfg.signIn.proxy,
		DisableWebPush:     !c.Bool("web-push"),

		DesktopScheme:       cfg.signIn.desktopScheme,
		LegacyDesktopScheme: cfg.signIn.legacyDesktopScheme,
	}
	return cfg, nil
}

// checkNATSURLs checks a comma-separated list of NATS URLs given to flag. The list may carry
// passwords: the message quotes a URL with its credentials redacted (or, when it does not
// parse, nothing of it).
func checkNATSURLs(flag, list string) error {
	for _, u := range strings.Split(list, ",") {
		p, err := url.Parse(strings.TrimSpace(u))
		if err != nil {
			return configError(flag, "a URL does not parse; each must be nats://host:port (or tls://, ws://, wss://)")
		}
		if p.Host == "" || !map[string]bool{"nats": true, "tls": true, "ws": true, "wss": true}[p.Scheme] {
			return configError(flag, "%q must be nats://host:port (or tls://, ws://, wss://)", streams.RedactURLs(u))
		}
	}
	return nil
}

func checkHostPort(hp string) error {
	_, port, err := net.SplitHostPort(hp)
	if err != nil {
		return fmt.Errorf("%q must be host:port, such as 127.0.0.1:8080", hp)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%q: the port must be a number from 0 to 65535", hp)
	}
	return nil
}

// runServer starts every component, serves until the context ends (SIGINT or SIGTERM in main),
// then stops them in reverse order.
func runServer(c *cli.Context, dev bool) (err error) {
	cfg, err := readServerConfig(c, dev)
	if err != nil {
		return err
	}
	ctx := c.Context
	logger := newLogger(c)
	// natter reads its configuration once, from flags and the environment, so a hang-up has
	// nothing to reload: it is logged and ignored rather than killing the server undrained.
	hangups := make(chan os.Signal, 1)
	signal.Notify(hangups, syscall.SIGHUP)
	defer signal.Stop(hangups)
	// OIDC discovery is part of checking the configuration: a failure stops start-up before
	// anything is set up.
	if cfg.server.GitHub, cfg.server.OIDC, err = cfg.signIn.providers(ctx, cfg.server.PublicURL, logger); err != nil {
		return err
	}
	// The data dir holds what lives on this host: the private PostgreSQL cluster, the embedded
	// NATS store, uploads on disk. With all three elsewhere it is neither made nor locked, so a
	// server under a read-only root (systemd's ProtectSystem=strict) needs no directory at all.
	// It is made here, readable by others, before NATS would make it private: the private
	// cluster inside it runs as an unprivileged user who must enter it.
	diskUploads := c.String("upload-s3-endpoint") == "" && c.String("upload-dir") == ""
	if cfg.natsURL == "" || c.String("database-url") == "" || diskUploads {
		if err := os.MkdirAll(c.String("data-dir"), 0o755); err != nil {
			return fmt.Errorf("create --data-dir: %w", err)
		}
	}
	if cfg.natsURL == "" || c.String("database-url") == "" {
		release, err := lockDataDir(c.String("data-dir"))
		if err != nil {
			return err
		}
		defer release()
	}
	// The port is taken before anything is set up, so a busy one is found at once.
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on --addr %s: %w", cfg.addr, err)
	}
	defer ln.Close()
	metricsLn, err := listenMetrics(c.String("metrics-addr"))
	if err != nil {
		return err
	}
	if metricsLn != nil {
		defer metricsLn.ln.Close()
	}
	blobs, err := openUploads(c)
	if err != nil {
		return err
	}
	emb, nc, stopNATS, err := startNATS(ctx, cfg, c.String("data-dir"), logger)
	if err != nil {
		return err
	}
	defer stopNATS()
	open := func() (*database, error) {
		return openDatabase(ctx, c, logger, streams.StoreConfig(nc, persist.Config{MaxConns: 32}), true)
	}
	var db *database
	if c.String("database-url") == "" {
		db, err = open() // the private cluster: starting it is not something to wait for
	} else {
		var apiLn net.Listener
		db, apiLn, err = openDatabaseWaiting(ctx, open, ln, logger)
		if err == nil {
			ln = apiLn
		}
	}
	if err != nil {
		return err
	}
	defer func() {
		stopCtx := context.WithoutCancel(ctx)
		if cerr := db.Close(stopCtx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	releaseClaim, err := streams.ClaimDatabase(ctx, db.Store, emb != nil)
	if err != nil {
		return err
	}
	defer releaseClaim()
	// Bot runtimes on the embedded server's listener, or on the external cluster through its
	// auth callout.
	callout, stopCallout, err := cfg.callout.start(ctx)
	if err != nil {
		return err
	}
	defer stopCallout()

	// Objects whose deletion failed after an earlier workspace deletion are retried now.
	if res, err := server.DeleteQueuedUploads(ctx, db.Store, blobs); err != nil {
		logger.Warn("queued upload deletions", "deleted", res.Deleted, "failed", res.Failed, "error", err)
	} else if res.Deleted+res.Failed > 0 {
		logger.Info("queued upload deletions", "deleted", res.Deleted, "failed", res.Failed)
	}

	if cfg.server.DevBootstrap {
		b, err := persist.WithTxV(ctx, db.Store, func(tx *persist.Tx) (persist.Bootstrap, error) { return tx.DevBootstrap(ctx) })
		if err != nil {
			return fmt.Errorf("dev bootstrap: %w", err)
		}
		logger.Info("dev bootstrap", "created", b.Created, "owner_user_id", b.Owner.ID, "workspace_id", b.Workspace.ID)
	}

	cfg.server.Uploads = blobs
	cfg.server.Collectors = processCollectors(db.Store, nc)
	sysCfg := system.Config{Store: db.Store, NATS: nc, Embedded: emb, Logger: logger, Server: cfg.server,
		Relay:     streams.RelayConfig{Replicas: cfg.streamReplicas, RetireAfter: cfg.streamIdle},
		Realtime:  realtime.Config{MaxSocketsPerUser: cfg.socketsPerUser},
		Callbacks: outbound.CallbackConfig{AllowAddr: callbackPolicy(c.Bool("callback-allow-loopback"))},
		Callout:   callout}
	if !cfg.server.DisableWebPush {
		sysCfg.Push = &push.Config{Subscriber: pushSubscriber(cfg.server.PublicURL), PushoverToken: cfg.pushoverToken}
	}
	sys, err := system.New(ctx, sysCfg)
	if err != nil {
		if ce := (*system.ServerConfigError)(nil); errors.As(err, &ce) {
			return usageErrorf("invalid configuration: %w", ce.Err)
		}
		return err
	}
	srv := sys.Server
	logger.Info("sign-in methods", "enabled", signInMethods(cfg.server, srv.AuthMethods()))
	logger.Info("natter started", startupFacts(c, cfg, ln, metricsLn)...)
	fmt.Fprintf(c.App.Writer, "natter listening on http://%s\n", ln.Addr())
	fmt.Fprintf(c.App.Writer, "open %s/ in a browser to chat\n", clientURL(cfg.server.PublicURL, ln.Addr()))
	if metricsLn != nil {
		metricsLn.handler, metricsLn.logger = srv.MetricsHandler(), logger
		fmt.Fprintf(c.App.Writer, "natter metrics on http://%s/metrics\n", metricsLn.ln.Addr())
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		for {
			select {
			case <-hangups:
				logger.Info("SIGHUP ignored: natter has no configuration to reload (restart it to change flags; SIGTERM or SIGINT stops it)")
			case <-gctx.Done():
				logger.Info("stopping", "reason", context.Cause(gctx).Error())
				return nil
			}
		}
	})
	g.Go(func() error { return sys.Run(gctx, ln) })
	if metricsLn != nil {
		g.Go(func() error { return metricsLn.Run(gctx) })
	}
	err = g.Wait()
	logger.Info("natter stopped")
	return err
}

// callbackPolicy is who callbacks may reach: public addresses, and loopback when allowed.
func callbackPolicy(loopback bool) func(netip.Addr) bool {
	if !loopback {
		return outbound.PublicOnly
	}
	return outbound.PublicOrLoopback
}

// pushSubscriber is the contact push services are given: the public URL when it is https, else
// none.
func pushSubscriber(publicURL string) string {
	if publicURL == "" {
		return ""
	}
	subscriber, _ := server.ParsePublicURL(publicURL)
	if !strings.HasPrefix(subscriber, "https:") {
		return ""
	}
	return subscriber
}

// startNATS connects to --nats-url, or starts the embedded server under the data dir (then
// returned too, for bot access; nil with --nats-url).
func startNATS(ctx context.Context, cfg serverConfig, dataDir string, logger *slog.Logger) (*streams.Embedded, *nats.Conn, func(), error) {
	if cfg.natsURL != "" {
		nc, err := streams.ConnectURL(ctx, cfg.natsURL, "natter")
		if err != nil {
			return nil, nil, nil, err
		}
		return nil, nc, nc.Close, nil
	}
	emb, err := streams.StartEmbedded(streams.EmbeddedConfig{StoreDir: filepath.Join(dataDir, "nats"),
		Listen: cfg.natsListen, Logger: logger})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--nats-listen: %w", err)
	}
	nc, err := emb.Connect("natter")
	if err != nil {
		emb.Shutdown()
		return nil, nil, nil, errors.Join(errors.New("connect to embedded nats"), err)
	}
	if url := emb.ClientURL(); url != "" {
		logger.Info("embedded nats listening for bots", "url", url)
	}
	return emb, nc, func() { nc.Close(); emb.Shutdown() }, nil
}

// clientURL is where a person opens the web client: the public URL when one is set, else the
// listening address, with a wildcard host shown as loopback.
func clientURL(publicURL string, addr net.Addr) string {
	if publicURL != "" {
		return strings.TrimRight(publicURL, "/")
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// signInMethods names every way in this server offers, for the start-up line: magic links
// always, then what the flags turned on, then the providers that are ready (oauth).
func signInMethods(cfg server.Config, oauth []string) []string {
	methods := []string{"magic-link"}
	if cfg.DevAuth {
		methods = append(methods, "dev-auth")
	}
	if cfg.PasswordAuth {
		methods = append(methods, "password")
	}
	if cfg.IdentityProxy.TeamDomain != "" {
		methods = append(methods, "identity-proxy")
	}
	return append(methods, oauth...)
}
