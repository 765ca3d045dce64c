package admin

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sync/errgroup"
)

// Bench limits: the load stays on this machine and ends by itself.
const (
	benchMaxSockets  = 20000
	benchMaxPosters  = 64
	benchMaxRate     = 20000
	benchMaxDuration = 10 * time.Minute
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name: "bench",
		Usage: "load a Natter server on this machine: N WebSocket clients over several 127.0.0.x source addresses, M HTTP " +
			"posters at a target rate; reports messages/s, post-to-delivery p50/p99/p999, lost and duplicate deliveries, " +
			"connect time, the server's RSS per socket and the load generator's CPU per delivered frame",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", EnvVars: []string{"NATTER_URL"}, Value: "http://127.0.0.1:8080", Usage: "base URL of the server (loopback only)"},
			&cli.StringFlag{Name: "token", EnvVars: []string{"NATTER_TOKEN"}, Usage: "bearer token (sst_ or ccb_); empty relies on the development fallback of natter dev"},
			&cli.StringFlag{Name: "workspace", EnvVars: []string{"NATTER_WORKSPACE"}, Usage: "workspace id to load (default: a new workspace bench-<time>, created for this run)"},
			&cli.StringFlag{Name: "channel", EnvVars: []string{"NATTER_CHANNEL"}, Usage: "channel id to post into (default: #bench, created if missing)"},
			&cli.IntFlag{Name: "sockets", EnvVars: []string{"NATTER_SOCKETS"}, Value: 1000, Usage: "WebSocket clients, at most 20000"},
			&cli.IntFlag{Name: "posters", EnvVars: []string{"NATTER_POSTERS"}, Value: 4, Usage: "concurrent HTTP posters, at most 64"},
			&cli.Float64Flag{Name: "rate", EnvVars: []string{"NATTER_RATE"}, Value: 5, Usage: "target posts per second across all posters"},
			&cli.DurationFlag{Name: "duration", EnvVars: []string{"NATTER_DURATION"}, Value: 20 * time.Second, Usage: "how long to post, at most 10m"},
			&cli.IntFlag{Name: "source-addrs", EnvVars: []string{"NATTER_SOURCE_ADDRS"}, Value: 8, Usage: "127.0.0.x source addresses the sockets spread over"},
			&cli.IntFlag{Name: "connect-concurrency", EnvVars: []string{"NATTER_CONNECT_CONCURRENCY"}, Value: 200, Usage: "handshakes in flight at once"},
			&cli.DurationFlag{Name: "drain", EnvVars: []string{"NATTER_DRAIN"}, Value: 10 * time.Second, Usage: "how long to wait for the last deliveries"},
			&cli.BoolFlag{Name: "reconnect", EnvVars: []string{"NATTER_RECONNECT"}, Usage: "at the end, drop every socket, post a burst, and reconnect all at once from their cursors"},
			&cli.IntFlag{Name: "server-pid", EnvVars: []string{"NATTER_SERVER_PID"}, Usage: "the server's pid for RSS (default: found by its listening port)"},
		},
		Action: runBench,
	}
}

type benchConfig struct {
	base, token, workspace, channel    string
	sockets, posters, sources, dialers int
	rate                               float64
	duration, drain                    time.Duration
	reconnect                          bool
	pid                                int
}

func readBenchConfig(c *cli.Context) (benchConfig, error) {
	b := benchConfig{base: c.String("url"), token: c.String("token"), workspace: c.String("workspace"), channel: c.String("channel"),
		sockets: c.Int("sockets"), posters: c.Int("posters"), sources: c.Int("source-addrs"), dialers: c.Int("connect-concurrency"),
		rate: c.Float64("rate"), duration: c.Duration("duration"), drain: c.Duration("drain"), reconnect: c.Bool("reconnect"),
		pid: c.Int("server-pid")}
	u, err := url.Parse(b.base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return b, configError("url", "%q must be http://host:port", b.base)
	}
	ips, err := net.LookupIP(u.Hostname())
	if err != nil || len(ips) == 0 {
		return b, configError("url", "cannot resolve %q", u.Hostname())
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return b, configError("url", "the bench only targets loopback addresses, and %s is %s", u.Hostname(), ip)
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
	if b.pid == 0 {
		port, _ := strconv.Atoi(u.Port())
		b.pid, _ = serverPID(port) // RSS is reported only when the server is visible
	}
	return b, nil
}

type benchRun struct {
	cfg     benchConfig
	api     *benchHTTP
	sockets []*benchSocket
	out     io.Writer
}

func runBench(c *cli.Context) error {
	cfg, err := readBenchConfig(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, cfg.duration+cfg.drain+5*time.Minute)
	defer cancel()
	raiseFileLimit()
	r := &benchRun{cfg: cfg, out: c.App.Writer, api: &benchHTTP{base: cfg.base, token: cfg.token,
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: benchMaxPosters}}}}
	if err := r.resolveTargets(ctx); err != nil {
		return err
	}
	defer r.closeAll()
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
		if _, err := r.api.do(ctx, http.MethodPost, "/api/workspaces", map[string]string{"name": name}, &created); err != nil {
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
	if _, err := r.api.do(ctx, http.MethodGet, "/api/workspaces/"+r.cfg.workspace+"/channels", nil, &list); err != nil {
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
	if _, err := r.api.do(ctx, http.MethodPost, "/api/workspaces/"+r.cfg.workspace+"/channels", map[string]string{"name": "bench"}, &created); err != nil {
		return fmt.Errorf("bench: create #bench: %w", err)
	}
	r.cfg.channel = created.Channel.ID
	return nil
}

// tail is the newest cursor the caller may see now.
func (r *benchRun) tail(ctx context.Context) (int64, error) {
	var page struct {
		TailCursor string `json:"tail_cursor"`
	}
	if _, err := r.api.do(ctx, http.MethodGet, "/api/realtime/events?limit=1&include_tail=true&workspace_id="+r.cfg.workspace, nil, &page); err != nil {
		return 0, fmt.Errorf("bench: read the tail cursor: %w", err)
	}
	if page.TailCursor == "" {
		return 0, nil
	}
	return strconv.ParseInt(page.TailCursor, 10, 64)
}

// connect opens every socket (at most connect-concurrency handshakes at once) and returns the
// handshake durations.
func (r *benchRun) connect(ctx context.Context, sockets []*benchSocket) ([]time.Duration, error) {
	took := make([]time.Duration, len(sockets))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.dialers)
	for i, s := range sockets {
		g.Go(func() error {
			start := time.Now()
			if err := s.dial(gctx, r.cfg.base, r.cfg.workspace, r.cfg.token); err != nil {
				return fmt.Errorf("bench: socket %d from %s: %w", i, s.source, err)
			}
			took[i] = time.Since(start)
			return nil
		})
	}
	return took, g.Wait()
}

func (r *benchRun) closeAll() {
	for _, s := range r.sockets {
		if s.conn != nil {
			_ = s.conn.Close()
			<-s.closed
		}
	}
}

// post runs the posters at the target rate until the duration ends and returns the cursors the
// server acknowledged with 2xx.
func (r *benchRun) post(ctx context.Context, duration time.Duration, rate float64) ([]int64, int) {
	var mu sync.Mutex
	var acked []int64
	var failed atomic.Int64
	interval := time.Duration(float64(time.Second) * float64(r.cfg.posters) / rate)
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for p := 0; p < r.cfg.posters; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := time.Now().Add(time.Duration(p) * interval / time.Duration(r.cfg.posters))
			for i := 0; ; i++ {
				if next.After(deadline) || ctx.Err() != nil {
					return
				}
				time.Sleep(time.Until(next))
				next = next.Add(interval)
				var resp struct {
					Event struct {
						Cursor string `json:"cursor"`
					} `json:"event"`
				}
				body := map[string]string{"body": benchMarker + strconv.FormatInt(time.Now().UnixNano(), 10),
					"nonce": fmt.Sprintf("bench-%d-%d-%d", deadline.UnixNano(), p, i)}
				if _, err := r.api.do(ctx, http.MethodPost, "/api/channels/"+r.cfg.channel+"/messages", body, &resp); err != nil {
					if failed.Add(1) == 1 {
						fmt.Fprintf(r.out, "post failed (further failures are only counted): %v\n", err)
					}
					continue
				}
				if c, err := strconv.ParseInt(resp.Event.Cursor, 10, 64); err == nil {
					mu.Lock()
					acked = append(acked, c)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return acked, int(failed.Load())
}

// waitCaughtUp blocks until every socket has received cursor or the drain time passes, and
// returns how long that took.
func (r *benchRun) waitCaughtUp(ctx context.Context, cursor int64, within time.Duration) (time.Duration, bool) {
	start := time.Now()
	chans := make([]chan struct{}, 0, len(r.sockets))
	for _, s := range r.sockets {
		s.mu.Lock()
		if s.cursor < cursor {
			ch := make(chan struct{})
			s.caught = ch
			s.target.Store(cursor)
			chans = append(chans, ch)
		}
		s.mu.Unlock()
	}
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	for _, ch := range chans {
		select {
		case <-ch:
		case <-timeout.C:
			return time.Since(start), false
		case <-ctx.Done():
			return time.Since(start), false
		}
	}
	return time.Since(start), true
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (r *benchRun) run(ctx context.Context) error {
	cfg := r.cfg
	rssBefore, _ := rssBytes(cfg.pid)
	startCursor, err := r.tail(ctx)
	if err != nil {
		return err
	}
	r.sockets = make([]*benchSocket, cfg.sockets)
	for i := range r.sockets {
		r.sockets[i] = &benchSocket{source: net.IPv4(127, 0, 0, byte(1+i%cfg.sources)), cursor: startCursor, base: startCursor}
	}
	fmt.Fprintf(r.out, "bench: %d sockets from %d source addresses, %d posters at %.1f posts/s for %s into %s\n",
		cfg.sockets, cfg.sources, cfg.posters, cfg.rate, cfg.duration, cfg.channel)
	connectStart := time.Now()
	took, err := r.connect(ctx, r.sockets)
	if err != nil {
		return err
	}
	connectAll := time.Since(connectStart)
	fmt.Fprintf(r.out, "connect: %d sockets in %s (handshake p50 %s, p99 %s)\n", cfg.sockets, connectAll.Round(time.Millisecond),
		percentile(took, 0.5).Round(time.Microsecond), percentile(took, 0.99).Round(time.Microsecond))
	if cfg.pid > 0 && cfg.sockets > 0 {
		time.Sleep(2 * time.Second) // let the server settle before reading its memory
		rssAfter, _ := rssBytes(cfg.pid)
		fmt.Fprintf(r.out, "memory: server RSS %.1f MiB -> %.1f MiB, %.0f bytes per socket\n", float64(rssBefore)/(1<<20),
			float64(rssAfter)/(1<<20), float64(rssAfter-rssBefore)/float64(cfg.sockets))
	}

	frames0, cpu0 := r.frames(), cpuTime()
	postStart := time.Now()
	acked, failed := r.post(ctx, cfg.duration, cfg.rate)
	posted := time.Since(postStart)
	last := startCursor
	for _, c := range acked {
		last = max(last, c)
	}
	caughtIn, ok := r.waitCaughtUp(ctx, last, cfg.drain)
	elapsed := time.Since(postStart)
	frames, cpu := r.frames()-frames0, cpuTime()-cpu0
	fmt.Fprintf(r.out, "posts: %d acknowledged (%.1f/s), %d failed\n", len(acked), float64(len(acked))/posted.Seconds(), failed)
	fmt.Fprintf(r.out, "deliveries: %d frames in %s (%.0f/s); last delivery %s after the last post%s\n", frames,
		elapsed.Round(time.Millisecond), float64(frames)/elapsed.Seconds(), caughtIn.Round(time.Millisecond), map[bool]string{false: " (drain timed out)", true: ""}[ok])
	r.reportDeliveries(acked)
	if frames > 0 {
		fmt.Fprintf(r.out, "load generator: %s CPU, %.2f µs per delivered frame\n", cpu.Round(time.Millisecond),
			float64(cpu.Microseconds())/float64(frames))
	}
	if !cfg.reconnect {
		return nil
	}
	return r.reconnectAll(ctx)
}

func (r *benchRun) frames() int {
	n := 0
	for _, s := range r.sockets {
		s.mu.Lock()
		n += s.frames
		s.mu.Unlock()
	}
	return n
}

// reportDeliveries checks every acknowledged cursor against every socket and prints latency.
func (r *benchRun) reportDeliveries(acked []int64) {
	var lost, dups, order int
	var hist histogram
	closed := 0
	for _, s := range r.sockets {
		s.mu.Lock()
		for _, c := range acked {
			if !s.has(c) {
				lost++
			}
		}
		dups, order = dups+s.dups, order+s.order
		hist.merge(&s.hist)
		s.hist = histogram{}
		if s.closeBy != 0 {
			closed++
		}
		s.mu.Unlock()
	}
	fmt.Fprintf(r.out, "latency post-to-delivery: p50 %s, p99 %s, p999 %s over %d deliveries\n", hist.quantile(0.5).Round(time.Microsecond),
		hist.quantile(0.99).Round(time.Microsecond), hist.quantile(0.999).Round(time.Microsecond), hist.n)
	fmt.Fprintf(r.out, "integrity: %d lost (acknowledged, not delivered when the drain ended), %d duplicated, %d out of order, %d sockets closed by the server\n",
		lost, dups, order, closed)
}

// reconnectAll drops every socket, posts a burst while they are away, reconnects them all at
// once from their cursors and measures until every socket has caught up.
func (r *benchRun) reconnectAll(ctx context.Context) error {
	r.closeAll()
	acked, _ := r.post(ctx, 2*time.Second, r.cfg.rate)
	last := int64(0)
	for _, c := range acked {
		last = max(last, c)
	}
	start := time.Now()
	if _, err := r.connect(ctx, r.sockets); err != nil {
		return err
	}
	connected := time.Since(start)
	caught, ok := r.waitCaughtUp(ctx, last, 60*time.Second)
	fmt.Fprintf(r.out, "reconnect: %d sockets back in %s, all caught up to cursor %d in %s%s\n", len(r.sockets),
		connected.Round(time.Millisecond), last, (connected + caught).Round(time.Millisecond), map[bool]string{false: " (timed out)", true: ""}[ok])
	r.reportDeliveries(acked)
	return nil
}
