package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
)

// Bench limits: the load stays on this machine and ends by itself.
const (
	benchMaxSockets  = 100000
	benchMaxPosters  = 64
	benchMaxRate     = 20000
	benchMaxDuration = 10 * time.Minute
)

// Mode is a mode of `natter bench` that a package with other imports provides (admin's data
// mode reaches Postgres): its flags join the command's, and --mode <Name> runs it in place of
// the load generator's own modes.
type Mode struct {
	Name  string
	Flags []cli.Flag
	Run   func(*cli.Context) error
}

// Seeders write straight into the database what the bench would take too long to make through
// the API (admin's: the bench itself talks HTTP).
type Seeders struct {
	// Members makes n people members of a workspace, each with a session of their own, and
	// returns their session tokens.
	Members func(c *cli.Context, workspaceID string, n int) ([]string, error)
	// Workspaces makes n dormant workspaces of the owner, a channel each, in the database at
	// databaseURL while no server runs, and returns their ids and their channels' ids.
	Workspaces func(ctx context.Context, databaseURL, ownerID string, n int) ([][2]string, error)
}

// Command is `natter bench`, with the seeders and the extra modes given.
func Command(seed Seeders, modes ...Mode) *cli.Command {
	cmd := &cli.Command{
		Name: "bench",
		Usage: "load a Natter server on this machine: N WebSocket clients over several 127.0.0.x source addresses, M HTTP " +
			"posters at a target rate; reports messages/s, post-to-delivery p50/p99/p999, lost and duplicate deliveries, " +
			"connect time, the server's RSS per socket and the load generator's CPU per delivered frame",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "url", EnvVars: []string{"NATTER_URL"}, Value: cli.NewStringSlice("http://127.0.0.1:8080"),
				Usage: "base URL of the server (loopback only); repeat it for the replicas of a cluster (natter cluster): sockets and natter posts are spread over them"},
			&cli.StringFlag{Name: "token", EnvVars: []string{"NATTER_TOKEN"}, Usage: "bearer token (sst_ or ccb_); empty relies on the development fallback of natter dev"},
			&cli.StringFlag{Name: "workspace", EnvVars: []string{"NATTER_WORKSPACE"}, Usage: "workspace id to load (default: a new workspace bench-<time>, created for this run)"},
			&cli.StringFlag{Name: "channel", EnvVars: []string{"NATTER_CHANNEL"}, Usage: "channel id to post into (default: #bench, created if missing)"},
			&cli.IntFlag{Name: "sockets", EnvVars: []string{"NATTER_SOCKETS"}, Value: 1000, Usage: "WebSocket clients, at most 100000 (past 15000 spread over load-generator processes)"},
			&cli.IntFlag{Name: "generators", EnvVars: []string{"NATTER_BENCH_GENERATORS"}, Usage: "fanout mode: load-generator processes holding the sockets (each may hold 19000); 0 holds up to 15000 in this process and spreads more over as many as needed"},
			&cli.BoolFlag{Name: "generators-in-process", Hidden: true, Usage: "run the load generators as goroutines speaking the same protocol (tests)"},
			&cli.BoolFlag{Name: "members", EnvVars: []string{"NATTER_BENCH_MEMBERS"}, Usage: "fanout mode: each socket signs in as its own member of the workspace, with its own session (seeded through the database: --database-url or --data-dir)"},
			&cli.IntFlag{Name: "posters", EnvVars: []string{"NATTER_POSTERS"}, Value: 4, Usage: "concurrent HTTP posters, at most 64"},
			&cli.Float64Flag{Name: "rate", EnvVars: []string{"NATTER_RATE"}, Value: 5, Usage: "target posts per second across all posters"},
			&cli.DurationFlag{Name: "duration", EnvVars: []string{"NATTER_DURATION"}, Value: 20 * time.Second, Usage: "how long to post, at most 10m"},
			&cli.IntFlag{Name: "source-addrs", EnvVars: []string{"NATTER_SOURCE_ADDRS"}, Value: 8, Usage: "127.0.0.x source addresses the sockets spread over"},
			&cli.IntFlag{Name: "connect-concurrency", EnvVars: []string{"NATTER_CONNECT_CONCURRENCY"}, Value: 200, Usage: "handshakes in flight at once"},
			&cli.DurationFlag{Name: "drain", EnvVars: []string{"NATTER_DRAIN"}, Value: 10 * time.Second, Usage: "how long to wait for the last deliveries"},
			&cli.BoolFlag{Name: "reconnect", EnvVars: []string{"NATTER_RECONNECT"}, Usage: "at the end, drop every socket, post a burst, and reconnect all at once from their cursors"},
			&cli.IntFlag{Name: "server-pid", EnvVars: []string{"NATTER_SERVER_PID"}, Usage: "the server's pid for RSS and CPU (default: found by its listening port)"},
			&cli.StringFlag{Name: "mode", EnvVars: []string{"NATTER_BENCH_MODE"}, Value: "fanout", Usage: "fanout (sockets and posters), posts (posters only: posts/s, answer latency, CPU per post), tenants (its own server at --url's address: dormant workspaces' cost, restart, wake-up) or data (seeds a large team's history into the database and times every read of the web client against a 10,000-message workspace)"},
			&cli.IntFlag{Name: "workspaces", EnvVars: []string{"NATTER_BENCH_WORKSPACES"}, Value: 2000, Usage: "tenants mode: workspaces in all, at most 50000"},
			&cli.IntFlag{Name: "active", EnvVars: []string{"NATTER_BENCH_ACTIVE"}, Value: 20, Usage: "tenants mode: of those, the active ones, whose sockets (--sockets in all) get the posts"},
			&cli.DurationFlag{Name: "stream-idle", EnvVars: []string{"NATTER_BENCH_STREAM_IDLE"}, Value: 20 * time.Second, Usage: "tenants mode: the server's --stream-idle"},
			&cli.IntFlag{Name: "wake-samples", EnvVars: []string{"NATTER_BENCH_WAKE_SAMPLES"}, Value: 50, Usage: "tenants mode: dormant workspaces woken one at a time after the restart"},
			&cli.BoolFlag{Name: "cluster", EnvVars: []string{"NATTER_BENCH_CLUSTER"}, Usage: "tenants mode: its server is `natter cluster` (3 NATS nodes, R3 streams, one replica; NATS on the 6 ports after --url's) instead of `natter serve` with embedded NATS"},
			&cli.StringFlag{Name: "tenants-dir", EnvVars: []string{"NATTER_BENCH_TENANTS_DIR"}, Usage: "tenants mode: directory of its server and database, kept afterwards (default: a temporary one, removed)"},
			&cli.BoolFlag{Name: "closed-loop", EnvVars: []string{"NATTER_CLOSED_LOOP"}, Usage: "posts mode: each poster posts again as soon as it is answered, ignoring --rate"},
			&cli.BoolFlag{Name: "baseline", EnvVars: []string{"NATTER_BASELINE"}, Usage: "fanout mode: after Natter, run a bare gobwas/ws server on loopback (no checks, no database) with the same sockets, posters and frames, and print Natter's figures as ratios of it"},
			&cli.IntFlag{Name: "postgres-pid", EnvVars: []string{"NATTER_POSTGRES_PID"}, Usage: "posts mode: the postmaster's pid, to report Postgres CPU per post"},
			&cli.StringFlag{Name: "postgres-data-dir", EnvVars: []string{"NATTER_POSTGRES_DATA_DIR"}, Usage: "posts mode: the cluster's data directory (its postmaster.pid names the postmaster; `natter dev` keeps it in <data-dir>/pg/data)"},
		},
	}
	for _, m := range modes {
		cmd.Flags = append(cmd.Flags, m.Flags...)
	}
	cmd.Action = func(c *cli.Context) error {
		for _, m := range modes {
			if c.String("mode") == m.Name {
				return m.Run(c)
			}
		}
		return runBench(c, seed)
	}
	return cmd
}

// configError says which flag is wrong, in the words of admin's own configuration errors.
func configError(flag, format string, args ...any) error {
	return fmt.Errorf("invalid configuration: --%s: %s", flag, fmt.Sprintf(format, args...))
}

type benchConfig struct {
	bases                              []string // every --url; base is the first, for set-up
	base, token, workspace, channel    string
	sockets, posters, sources, dialers int
	rate                               float64
	duration, drain                    time.Duration
	reconnect                          bool
	pid                                int   // --server-pid
	pids                               []int // every server process (one per --url, the same process once)
	generators                         int
	inProcess, members                 bool
	mode                               string
	closedLoop, baseline               bool
	pgPID                              int
	tenants                            tenantsConfig
}

func readBenchConfig(c *cli.Context) (benchConfig, error) {
	b := benchConfig{bases: c.StringSlice("url"), token: c.String("token"), workspace: c.String("workspace"), channel: c.String("channel"),
		sockets: c.Int("sockets"), posters: c.Int("posters"), sources: c.Int("source-addrs"), dialers: c.Int("connect-concurrency"),
		rate: c.Float64("rate"), duration: c.Duration("duration"), drain: c.Duration("drain"), reconnect: c.Bool("reconnect"),
		pid: c.Int("server-pid"), generators: c.Int("generators"), inProcess: c.Bool("generators-in-process"), members: c.Bool("members"), mode: c.String("mode"), closedLoop: c.Bool("closed-loop"), baseline: c.Bool("baseline"), pgPID: c.Int("postgres-pid"),
		tenants: tenantsConfig{workspaces: c.Int("workspaces"), active: c.Int("active"), streamIdle: c.Duration("stream-idle"),
			wakeSamples: c.Int("wake-samples"), dir: c.String("tenants-dir"), cluster: c.Bool("cluster")}}
	if dir := c.String("postgres-data-dir"); dir != "" && b.pgPID == 0 {
		pid, err := postmasterPID(dir)
		if err != nil {
			return b, configError("postgres-data-dir", "no running postmaster there: %v", err)
		}
		b.pgPID = pid
	}
	if b.mode != "fanout" && b.mode != "posts" && b.mode != "tenants" {
		return b, configError("mode", "must be fanout, posts, tenants or data")
	}
	if t := b.tenants; b.mode == "tenants" {
		switch {
		case t.active < 1 || t.active > t.workspaces:
			return b, configError("active", "must be 1 to --workspaces")
		case t.workspaces > 50000:
			return b, configError("workspaces", "must be at most 50000")
		case t.streamIdle < time.Second:
			return b, configError("stream-idle", "must be at least 1s")
		case t.wakeSamples < 1 || t.wakeSamples > t.workspaces-t.active:
			return b, configError("wake-samples", "must be 1 to the dormant workspaces")
		case len(b.bases) != 1:
			return b, configError("url", "the tenants mode runs one server: give one --url")
		}
	}
	if len(b.bases) == 0 {
		return b, configError("url", "give at least one server URL")
	}
	b.base = b.bases[0]
	for _, base := range b.bases {
		p, err := url.Parse(base)
		if err != nil || p.Scheme != "http" || p.Host == "" {
			return b, configError("url", "%q must be http://host:port", base)
		}
		ips, err := net.LookupIP(p.Hostname())
		if err != nil || len(ips) == 0 {
			return b, configError("url", "cannot resolve %q", p.Hostname())
		}
		for _, ip := range ips {
			if !ip.IsLoopback() {
				return b, configError("url", "the bench only targets loopback addresses, and %s is %s", p.Hostname(), ip)
			}
		}
	}
	switch {
	case b.sockets < 0 || b.sockets > benchMaxSockets:
		return b, configError("sockets", "must be 0 to %d", benchMaxSockets)
	case b.posters < 1 || b.posters > benchMaxPosters:
		return b, configError("posters", "must be 1 to %d", benchMaxPosters)
	case b.rate <= 0 || b.rate > benchMaxRate:
		return b, configError("rate", "must be above 0 and at most %d", benchMaxRate)
	case b.duration <= 0 || b.duration > benchMaxDuration:
		return b, configError("duration", "must be above 0 and at most %s", benchMaxDuration)
	case b.sources < 1 || b.sources > 250:
		return b, configError("source-addrs", "must be 1 to 250")
	case b.dialers < 1:
		return b, configError("connect-concurrency", "must be positive")
	}
	if b.mode == "fanout" {
		switch {
		case b.generators < 0 || b.generators > 64:
			return b, configError("generators", "must be 0 to 64")
		case b.generators > 0 && b.sockets > b.generators*generatorSockets:
			return b, configError("generators", "%d processes hold at most %d sockets", b.generators, b.generators*generatorSockets)
		case b.generators == 0 && b.sockets > 15000:
			b.generators = (b.sockets + generatorSockets - 1) / generatorSockets
		}
		if b.sockets > 28000*b.sources {
			return b, configError("source-addrs", "%d sockets need at least %d source addresses (about 28,000 ports each)", b.sockets, (b.sockets+27999)/28000)
		}
	}
	if b.mode != "tenants" {
		b.pids = serverPIDs(b.pid, b.bases) // RSS is reported only when the servers are visible
		if len(b.pids) > 0 {
			b.pid = b.pids[0]
		}
	}
	return b, nil
}

type benchRun struct {
	cfg     benchConfig
	api     *API           // the first --url, for set-up
	apis    []*API         // one per --url: natter posts go round them
	sockets []*benchSocket // the tenants mode's
	set     socketSet      // the fanout mode's
	out     io.Writer
	started time.Time
	posts   atomic.Int64 // bench posts numbered so far in this run
	// tenantOf is, in the tenants mode, the index of the active workspace of socket i.
	tenantOf func(i int) int
}

// serverPIDs is --server-pid, or else the processes listening on the --urls' ports (each once).
func serverPIDs(given int, bases []string) []int {
	if given > 0 {
		return []int{given}
	}
	var out []int
	seen := map[int]bool{}
	for _, base := range bases {
		u, err := url.Parse(base)
		if err != nil {
			return nil
		}
		port, _ := strconv.Atoi(u.Port())
		pid, err := serverPID(port)
		if err != nil {
			return nil
		}
		if !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
		}
	}
	return out
}

func runBench(c *cli.Context, seed Seeders) error {
	cfg, err := readBenchConfig(c)
	if err != nil {
		return err
	}
	// Seeding members and connecting 100,000 sockets (twice, with the baseline) take minutes on a
	// busy machine: 10 ms a socket on top.
	budget := cfg.duration + cfg.drain + 5*time.Minute + time.Duration(cfg.sockets)*10*time.Millisecond
	if cfg.mode == "tenants" { // two load phases, and thousands of workspaces to make and let rest
		budget = 2*budget + 2*cfg.tenants.streamIdle + time.Hour
	}
	ctx, cancel := context.WithTimeout(c.Context, budget)
	defer cancel()
	raiseFileLimit()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: benchMaxPosters}}
	r := &benchRun{cfg: cfg, out: c.App.Writer, started: time.Now()}
	for _, base := range cfg.bases {
		r.apis = append(r.apis, &API{Base: base, Token: cfg.token, Client: client})
	}
	r.api = r.apis[0]
	if cfg.mode == "tenants" {
		if err := tenantsPort(cfg.base); err != nil {
			return err
		}
		if seed.Workspaces == nil {
			return configError("mode", "this build of the bench cannot seed workspaces")
		}
		return runTenants(ctx, cfg, r, seed.Workspaces)
	}
	if err := r.resolveTargets(ctx); err != nil {
		return err
	}
	if cfg.mode == "posts" {
		return r.runPosts(ctx)
	}
	var tokens []string
	if cfg.members {
		if seed.Members == nil {
			return configError("members", "this build of the bench cannot seed members")
		}
		began := time.Now()
		if tokens, err = seed.Members(c, r.cfg.workspace, cfg.sockets); err != nil {
			return fmt.Errorf("bench: seed %d members: %w", cfg.sockets, err)
		}
		fmt.Fprintf(r.out, "bench: %d members with a session each seeded in %s\n", len(tokens), time.Since(began).Round(time.Millisecond))
	}
	if cfg.generators == 0 {
		r.set = newLocalSet(0, cfg.sockets, cfg.sources, tokens, true)
	} else {
		spawn := spawnProcess
		if cfg.inProcess {
			spawn = spawnInProcess
		}
		rs, err := startGenerators(ctx, spawn, cfg.generators, cfg.sockets, cfg.sources, tokens)
		if err != nil {
			return err
		}
		defer func() { _ = rs.stop() }()
		r.set = rs
	}
	defer func() { _ = r.set.closeAll(context.WithoutCancel(ctx)) }()
	return r.run(ctx)
}

// raiseFileLimit lets the bench hold its sockets: the soft descriptor limit goes to the hard one.
func raiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

// resolveTargets picks the workspace and the channel, creating #bench when needed.
func (r *benchRun) resolveTargets(ctx context.Context) error {
	if r.cfg.workspace == "" {
		// A run of its own: the bench's messages never land in a workspace people use.
		name := "bench-" + time.Now().UTC().Format("20060102-150405")
		var created struct {
			Workspace struct{ ID, Slug string } `json:"workspace"`
		}
		if _, err := r.api.Do(ctx, http.MethodPost, "/api/workspaces", map[string]string{"name": name}, &created); err != nil {
			return fmt.Errorf("bench: create the workspace %s (pass --workspace to load an existing one): %w", name, err)
		}
		r.cfg.workspace = created.Workspace.ID
		fmt.Fprintf(r.out, "bench: created workspace %s (%s) for this run; pass --workspace to load another\n",
			created.Workspace.Slug, created.Workspace.ID)
	}
	if r.cfg.channel != "" {
		return nil
	}
	var list struct {
		Channels []struct{ ID, Name string } `json:"channels"`
	}
	if _, err := r.api.Do(ctx, http.MethodGet, "/api/workspaces/"+r.cfg.workspace+"/channels", nil, &list); err != nil {
		return fmt.Errorf("bench: list channels: %w", err)
	}
	for _, ch := range list.Channels {
		if ch.Name == "bench" {
			r.cfg.channel = ch.ID
			return nil
		}
	}
	var created struct {
		Channel struct{ ID string } `json:"channel"`
	}
	if _, err := r.api.Do(ctx, http.MethodPost, "/api/workspaces/"+r.cfg.workspace+"/channels", map[string]string{"name": "bench"}, &created); err != nil {
		return fmt.Errorf("bench: create #bench: %w", err)
	}
	r.cfg.channel = created.Channel.ID
	return nil
}
