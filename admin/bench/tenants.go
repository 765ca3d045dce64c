package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/persist/pglocal"
)

// The tenants mode (--mode tenants) measures what dormant workspaces cost: it runs its own
// Natter (`natter serve`, embedded NATS, a private PostgreSQL it keeps running across the
// restart), with a few active workspaces whose sockets receive posts, first alone and then beside
// --workspaces in all, most of them dormant.

// tenantsConfig is the tenants mode's part of the bench configuration.
type tenantsConfig struct {
	workspaces, active, wakeSamples int
	streamIdle                      time.Duration
	dir                             string
	cluster                         bool // natter cluster (3 NATS nodes, R3) instead of natter serve
}

// tenantWorkspace is a workspace the bench made, with its channel.
type tenantWorkspace struct{ id, channel string }

// tenantServer is the Natter process under test: `natter serve` with its embedded NATS, or
// `natter cluster` with three NATS nodes and one replica in one process.
type tenantServer struct {
	exe, addr, dataDir, dbURL string
	streamIdle                time.Duration
	cluster                   bool
	cmd                       *exec.Cmd
	exited                    chan error
}

// args is the server's command line.
func (s *tenantServer) args() []string {
	if s.cluster {
		_, port, _ := net.SplitHostPort(s.addr)
		p, _ := strconv.Atoi(port)
		return []string{"cluster", "--data-dir", s.dataDir, "--replicas", "1", "--nats-nodes", "3",
			"--base-port", port, "--nats-base-port", strconv.Itoa(p + 1),
			"--max-sockets-per-user", "100000", "--stream-idle", s.streamIdle.String()}
	}
	return []string{"serve", "--addr", s.addr, "--database-url", s.dbURL, "--data-dir", s.dataDir,
		"--dev-bootstrap", "--dev-auth", "--access-log=false", "--log-level", "warn",
		"--max-sockets-per-user", "100000", "--stream-idle", s.streamIdle.String()}
}

// start runs the server and returns how long it took from the exec to /readyz answering 200.
func (s *tenantServer) start(ctx context.Context) (time.Duration, error) {
	logFile, err := os.OpenFile(filepath.Join(s.dataDir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	defer logFile.Close()
	s.cmd = exec.Command(s.exe, s.args()...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	began := time.Now()
	if err := s.cmd.Start(); err != nil {
		return 0, err
	}
	s.exited = make(chan error, 1)
	go func() { s.exited <- s.cmd.Wait() }()
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case err := <-s.exited:
			return 0, fmt.Errorf("bench: the server exited before it was ready (%v); see %s", err, logFile.Name())
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		resp, err := client.Get("http://" + s.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(began), nil
			}
		}
	}
}

// stop ends the server as an operator would (SIGTERM), killing it after 30 s.
func (s *tenantServer) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

func (s *tenantServer) pid() int { return s.cmd.Process.Pid }

// jetStreamCounts counts the streams and durable consumers the NATS server (the cluster's
// first node: an R3 stream is on all three) keeps on disk.
func (s *tenantServer) jetStreamCounts() (streamCount, consumers int) {
	js := filepath.Join(s.dataDir, "nats", "jetstream")
	if s.cluster {
		js = filepath.Join(s.dataDir, "nats", "nats-1", "jetstream")
	}
	dirs, _ := filepath.Glob(filepath.Join(js, "*", "streams", "*"))
	obs, _ := filepath.Glob(filepath.Join(js, "*", "streams", "*", "obs", "*"))
	return len(dirs), len(obs)
}

// atRest is the server's resident memory and CPU share over a quiet window.
type atRest struct {
	rss                int64
	cpu, postgres      float64 // share of one core
	streams, consumers int
}

func (r *benchRun) measureRest(srv *tenantServer, pgPID int, window time.Duration) atRest {
	cpu0, _ := procCPU(srv.pid(), false)
	pg0, _ := treeCPU(pgPID)
	time.Sleep(window)
	cpu1, _ := procCPU(srv.pid(), false)
	pg1, _ := treeCPU(pgPID)
	rss, _ := rssBytes(srv.pid())
	st, co := srv.jetStreamCounts()
	return atRest{rss: rss, cpu: float64(cpu1-cpu0) / float64(window), postgres: float64(pg1-pg0) / float64(window),
		streams: st, consumers: co}
}

func runTenants(ctx context.Context, cfg benchConfig, out *benchRun, seed func(ctx context.Context, databaseURL, ownerID string, n int) ([][2]string, error)) (err error) {
	tc := cfg.tenants
	dir := tc.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "natter-bench-tenants-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	// Readable by others: the private PostgreSQL may run as an unprivileged user.
	if err := os.MkdirAll(filepath.Join(dir, "natter"), 0o755); err != nil {
		return err
	}
	_ = os.Chmod(dir, 0o755)
	pg, err := pglocal.Open(ctx, pglocal.Config{Dir: filepath.Join(dir, "pg"), MaxConnections: 100, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("bench: the tenants mode's private PostgreSQL: %w", err)
	}
	defer func() { _ = pg.Stop(context.WithoutCancel(ctx)) }()
	pgPID, _ := postmasterPID(pg.DataDir())
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	u, _ := url.Parse(cfg.base)
	srv := &tenantServer{exe: exe, addr: u.Host, dataDir: filepath.Join(dir, "natter"), dbURL: pg.URL("postgres"), streamIdle: tc.streamIdle}
	kind := "natter serve, embedded NATS"
	if tc.cluster {
		// natter cluster finds the PostgreSQL running in <dir>/pg and uses its database natter.
		srv.cluster, srv.dataDir, srv.dbURL, kind = true, dir, pg.URL("natter"), "natter cluster, 3 NATS nodes, R3 streams"
	}
	if _, err := srv.start(ctx); err != nil {
		return err
	}
	defer srv.stop()
	w := out.out
	fmt.Fprintf(w, "tenants: %s; %d workspaces, %d active with %d sockets in all, %.0f posts/s for %s per load phase; stream idle %s; data in %s\n",
		kind, tc.workspaces, tc.active, cfg.sockets, cfg.rate, cfg.duration, tc.streamIdle, dir)

	// retired waits until at most keep streams are left for 10 s in a row (the relay has
	// created, and retired, the streams of every workspace made), at most within.
	retired := func(keep int, within time.Duration) {
		deadline, quiet := time.Now().Add(within), 0
		for quiet < 10 && time.Now().Before(deadline) {
			if st, _ := srv.jetStreamCounts(); st <= keep {
				quiet++
			} else {
				quiet = 0
			}
			time.Sleep(time.Second)
		}
		if quiet < 10 {
			fmt.Fprintf(out.out, "tenants: the streams were not all retired within %s; the figures below are not at rest\n", within)
		}
	}
	// Until every stream but the active ones' has been retired.
	settle := func() { retired(tc.active+1, time.Hour) }
	// Both rests are measured on a process just restarted, with nobody connected: what a
	// workspace costs, not what a burst of creating thousands of them left in the heap.
	rest := func() (atRest, time.Duration, error) {
		srv.stop()
		ready, err := srv.start(ctx)
		if err != nil {
			return atRest{}, 0, err
		}
		time.Sleep(10 * time.Second)
		return out.measureRest(srv, pgPID, 30*time.Second), ready, nil
	}
	active, err := out.createWorkspaces(ctx, "active", tc.active)
	if err != nil {
		return err
	}
	settle()
	restA, _, err := rest()
	if err != nil {
		return err
	}
	// Each load phase runs on a server just restarted, once every stream has been retired
	// (the active workspaces wake at the warm-up), with the planner's statistics just taken:
	// the two phases differ only in the dormant workspaces beside them.
	phase := func(label string) (time.Duration, int, error) {
		srv.stop()
		if err := analyze(ctx, srv.dbURL); err != nil {
			return 0, 0, err
		}
		if _, err := srv.start(ctx); err != nil {
			return 0, 0, err
		}
		retired(0, 2*tc.streamIdle+time.Minute)
		if err := out.tenantSockets(ctx, active); err != nil {
			return 0, 0, err
		}
		time.Sleep(2 * time.Second)
		p99, lost := out.tenantLoad(ctx, active, label)
		out.closeAll()
		return p99, lost, nil
	}
	p99A, lostA, err := phase("alone")
	if err != nil {
		return err
	}
	var me struct {
		User struct{ ID string } `json:"user"`
	}
	if _, err := out.api.Do(ctx, http.MethodGet, "/api/me", nil, &me); err != nil {
		return err
	}
	// The dormant workspaces go straight into the database, as the relay leaves them once their
	// streams are retired, with the server stopped: through the API each would create a stream
	// and wait --stream-idle to lose it (10–15 stream creations a second here, 5 with R3).
	srv.stop()
	began := time.Now()
	pairs, err := seed(ctx, srv.dbURL, me.User.ID, tc.workspaces-tc.active)
	if err != nil {
		return fmt.Errorf("bench: seed the dormant workspaces: %w", err)
	}
	dormant := make([]tenantWorkspace, len(pairs))
	for i, p := range pairs {
		dormant[i] = tenantWorkspace{id: p[0], channel: p[1]}
	}
	fmt.Fprintf(w, "tenants: %d dormant workspaces seeded in %s\n", len(dormant), time.Since(began).Round(time.Millisecond))
	p99W, lostW, err := phase("beside")
	if err != nil {
		return err
	}
	settle()
	restW, ready, err := rest()
	if err != nil {
		return err
	}
	wake, err := out.wakeLatencies(ctx, dormant, tc.wakeSamples)
	if err != nil {
		return err
	}

	n := float64(tc.workspaces - tc.active)
	fmt.Fprintf(w, "at rest, %d active only:  RSS %.1f MB, CPU %.2f%% of a core (postgres %.2f%%), %d streams, %d durable consumers on disk\n",
		tc.active, float64(restA.rss)/1e6, 100*restA.cpu, 100*restA.postgres, restA.streams, restA.consumers)
	fmt.Fprintf(w, "at rest, %d workspaces: RSS %.1f MB, CPU %.2f%% of a core (postgres %.2f%%), %d streams, %d durable consumers on disk\n",
		tc.workspaces, float64(restW.rss)/1e6, 100*restW.cpu, 100*restW.postgres, restW.streams, restW.consumers)
	fmt.Fprintf(w, "per dormant workspace:   RSS %.2f KB, CPU %.2f µs per second\n",
		float64(restW.rss-restA.rss)/n/1e3, (restW.cpu-restA.cpu)*1e6/n)
	fmt.Fprintf(w, "restart to ready:        %s with %d workspaces\n", ready.Round(time.Millisecond), tc.workspaces)
	fmt.Fprintf(w, "waking workspace, post to first frame at a fresh socket (%d): p50 %s, p99 %s, max %s\n",
		len(wake), percentile(wake, 0.5).Round(time.Microsecond), percentile(wake, 0.99).Round(time.Microsecond),
		percentile(wake, 1).Round(time.Microsecond))
	fmt.Fprintf(w, "active post-to-delivery p99: %s alone, %s beside %d dormant (%.2fx); lost %d / %d\n",
		p99A.Round(time.Microsecond), p99W.Round(time.Microsecond), int(n), float64(p99W)/float64(max(p99A, 1)), lostA, lostW)
	return nil
}

// createWorkspaces makes n workspaces with a channel each, 16 at a time.
func (r *benchRun) createWorkspaces(ctx context.Context, kind string, n int) ([]tenantWorkspace, error) {
	out := make([]tenantWorkspace, n)
	var done atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	stamp := r.started.UTC().Format("150405")
	for i := range out {
		g.Go(func() error {
			var ws struct {
				Workspace struct{ ID string } `json:"workspace"`
			}
			name := fmt.Sprintf("%s-%s-%d", kind, stamp, i)
			if _, err := r.api.Do(gctx, http.MethodPost, "/api/workspaces", map[string]string{"name": name}, &ws); err != nil {
				return err
			}
			var ch struct {
				Channel struct{ ID string } `json:"channel"`
			}
			if _, err := r.api.Do(gctx, http.MethodPost, "/api/workspaces/"+ws.Workspace.ID+"/channels",
				map[string]string{"name": "general"}, &ch); err != nil {
				return err
			}
			out[i] = tenantWorkspace{id: ws.Workspace.ID, channel: ch.Channel.ID}
			if d := done.Add(1); d%2000 == 0 {
				fmt.Fprintf(r.out, "tenants: %d %s workspaces created\n", d, kind)
			}
			return nil
		})
	}
	return out, g.Wait()
}

// tenantSockets opens the sockets, spread over the active workspaces: socket i belongs to
// workspace i mod len(active).
func (r *benchRun) tenantSockets(ctx context.Context, active []tenantWorkspace) error {
	r.newSockets("")
	r.tenantOf = func(i int) int { return i % len(active) }
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.dialers)
	for i, s := range r.sockets {
		g.Go(func() error {
			if err := s.dial(gctx, r.socketURL(active[r.tenantOf(i)]), http.Header{}); err != nil {
				return fmt.Errorf("bench: socket %d: %w", i, err)
			}
			return nil
		})
	}
	return g.Wait()
}

func (r *benchRun) socketURL(ws tenantWorkspace) string {
	return "ws" + strings.TrimPrefix(r.cfg.base, "http") + "/api/realtime/ws?workspace_id=" + url.QueryEscape(ws.id)
}

// tenantTarget posts bench post n into active workspace n mod len(active).
func (r *benchRun) tenantTarget(active []tenantWorkspace) fanoutTarget {
	return fanoutTarget{name: "tenants", post: func(ctx context.Context, n int64) error {
		ch := active[int(n)%len(active)].channel
		_, err := r.api.Do(ctx, http.MethodPost, "/api/channels/"+ch+"/messages", map[string]string{"body": benchBody(n)}, nil)
		return err
	}}
}

// tenantWarmUp is how long the active workspaces are posted into, at the measured rate, before
// the measure: their streams are created again, their feeds go live, and the server's pools and
// caches reach the load's steady state.
const tenantWarmUp = 5 * time.Second

// tenantWindow is the span of each partial p99 a load phase prints, so that a stall (a
// neighbour's build, a checkpoint) shows as one window, not as the phase's figure.
const tenantWindow = 5 * time.Second

// tenantLoad posts into the active workspaces for the configured duration, after a warm-up at
// the same rate left out of the figures, and returns the post-to-delivery p99 over their
// sockets and how many deliveries never came.
func (r *benchRun) tenantLoad(ctx context.Context, active []tenantWorkspace, label string) (time.Duration, int) {
	r.post(ctx, r.tenantTarget(active), tenantWarmUp, r.cfg.rate)
	time.Sleep(2 * time.Second)
	take := func() histogram {
		var h histogram
		for _, s := range r.sockets {
			got := s.lat.take()
			h.merge(&got)
		}
		return h
	}
	take()
	var all histogram
	var windows []string
	stop := make(chan struct{})
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		t := time.NewTicker(tenantWindow)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				h := take()
				all.merge(&h)
				windows = append(windows, h.quantile(0.99).Round(time.Millisecond).String())
			}
		}
	}()
	acked, _ := r.post(ctx, r.tenantTarget(active), r.cfg.duration, r.cfg.rate)
	time.Sleep(r.cfg.drain)
	close(stop)
	<-collected
	h := take()
	all.merge(&h)
	windows = append(windows, h.quantile(0.99).Round(time.Millisecond).String())
	lost := 0
	for i, s := range r.sockets {
		s.mu.Lock()
		for _, n := range acked {
			if int(n)%len(active) == r.tenantOf(i) && !s.has(n) {
				lost++
			}
		}
		s.mu.Unlock()
	}
	fmt.Fprintf(r.out, "tenants: active load %s: %d posts, p50 %s, p99 %s over %d deliveries; p99 per %s: %s\n", label, len(acked),
		all.quantile(0.5).Round(time.Microsecond), all.quantile(0.99).Round(time.Microsecond), all.n, tenantWindow,
		strings.Join(windows, " "))
	return all.quantile(0.99), lost
}

// analyze takes the planner's statistics of the whole database, so that both load phases plan
// their queries from what the tables hold then (the first runs on tables just made).
func analyze(ctx context.Context, databaseURL string) error {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("bench: analyze: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("bench: analyze: %w", err)
	}
	return nil
}

// wakeLatencies wakes up to samples dormant workspaces one at a time: a fresh socket joins, a
// post goes in, and the time from sending the post to the socket receiving it is one sample.
func (r *benchRun) wakeLatencies(ctx context.Context, dormant []tenantWorkspace, samples int) ([]time.Duration, error) {
	var out []time.Duration
	step := max(1, len(dormant)/max(samples, 1))
	for i := 0; i < len(dormant) && len(out) < samples; i += step {
		ws := dormant[i]
		s := &benchSocket{source: net.IPv4(127, 0, 0, 1), lat: &latencies{}}
		if err := s.dial(ctx, r.socketURL(ws), http.Header{}); err != nil {
			return out, err
		}
		time.Sleep(100 * time.Millisecond) // its backfill (a few events) is read
		n := r.posts.Add(1)
		if _, err := r.api.Do(ctx, http.MethodPost, "/api/channels/"+ws.channel+"/messages", map[string]string{"body": benchBody(n)}, nil); err != nil {
			_ = s.conn.Close()
			return out, err
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			s.mu.Lock()
			got := s.has(n)
			s.mu.Unlock()
			s.lat.mu.Lock()
			q := s.lat.h.quantile(1)
			s.lat.mu.Unlock()
			if got {
				out = append(out, q)
				break
			}
			time.Sleep(time.Millisecond)
		}
		_ = s.conn.Close()
		<-s.closed
	}
	if len(out) == 0 {
		return nil, errors.New("bench: no waking workspace's first event reached its socket")
	}
	return out, nil
}

// tenantsPort checks that --url's address is free for the tenants mode's own server.
func tenantsPort(base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", u.Host)
	if err != nil {
		return fmt.Errorf("bench: the tenants mode runs its own server on --url's address %s, which is taken: %w", u.Host, err)
	}
	return l.Close()
}
