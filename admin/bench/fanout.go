package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// fanoutTarget is what the fan-out phase loads: Natter, or the bare baseline server.
type fanoutTarget struct {
	name string
	pids []int // the server processes, for their CPU and memory (none: unknown)
	// spec is where the sockets connect.
	spec dialSpec
	// post sends bench post n; its error says the post was not acknowledged.
	post func(ctx context.Context, n int64) error
}

// fanoutFigures are what a fan-out phase measured, for the comparison with the baseline.
type fanoutFigures struct {
	connect   time.Duration
	sockets   int // connected
	p99       time.Duration
	frames    int
	serverCPU time.Duration // -1: unknown
	// connectCPU is the server's CPU while the sockets connected (-1: unknown): less swayed by
	// other jobs on a shared machine than the connect time.
	connectCPU  time.Duration
	perSocket   float64 // bytes of server RSS per connected socket (-1: unknown)
	acked, lost int
	dups        int
}

// natterTarget posts into the bench channel and connects to the workspace's realtime socket,
// the sockets going round the --urls.
func (r *benchRun) natterTarget(cursor string) fanoutTarget {
	header := map[string]string{}
	if r.cfg.token != "" {
		header["Authorization"] = "Bearer " + r.cfg.token
	}
	var urls []string
	for _, base := range r.cfg.bases {
		urls = append(urls, "ws"+strings.TrimPrefix(base, "http")+"/api/realtime/ws?workspace_id="+url.QueryEscape(r.cfg.workspace))
	}
	return fanoutTarget{name: "natter", pids: r.cfg.pids,
		spec: dialSpec{URLs: urls, Header: header, Cursor: cursor, Dialers: r.cfg.dialers},
		post: func(ctx context.Context, n int64) error {
			_, err := r.apis[int(n)%len(r.apis)].Do(ctx, http.MethodPost, "/api/channels/"+r.cfg.channel+"/messages",
				map[string]string{"body": benchBody(n), "nonce": fmt.Sprintf("bench-%d-%d", r.started.UnixNano(), n)}, nil)
			return err
		}}
}

// tail is the newest cursor the caller may see now, as the server wrote it.
func (r *benchRun) tail(ctx context.Context) (string, error) {
	var page struct {
		TailCursor string `json:"tail_cursor"`
	}
	if _, err := r.api.Do(ctx, http.MethodGet, "/api/realtime/events?limit=1&include_tail=true&workspace_id="+url.QueryEscape(r.cfg.workspace), nil, &page); err != nil {
		return "", fmt.Errorf("bench: read the tail cursor: %w", err)
	}
	return page.TailCursor, nil
}

func (r *benchRun) closeAll() {
	for _, s := range r.sockets {
		if s.conn != nil {
			_ = s.conn.Close()
			<-s.closed
			s.conn = nil
		}
	}
}

// post runs the posters at the target rate until the duration ends and returns the numbers of
// the posts the server acknowledged.
func (r *benchRun) post(ctx context.Context, t fanoutTarget, duration time.Duration, rate float64) ([]int64, int) {
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
			for {
				if next.After(deadline) || ctx.Err() != nil {
					return
				}
				time.Sleep(time.Until(next))
				next = next.Add(interval)
				n := r.posts.Add(1)
				if err := t.post(ctx, n); err != nil {
					if failed.Add(1) == 1 {
						fmt.Fprintf(r.out, "%s: post failed (further failures are only counted): %v\n", t.name, err)
					}
					continue
				}
				mu.Lock()
				acked = append(acked, n)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return acked, int(failed.Load())
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// newSockets makes the tenants mode's sockets, spread over the source addresses, each with a
// latency count of its own.
func (r *benchRun) newSockets(cursor string) {
	r.sockets = make([]*benchSocket, r.cfg.sockets)
	for i := range r.sockets {
		r.sockets[i] = &benchSocket{source: net.IPv4(127, 0, 0, byte(1+i%r.cfg.sources)), cursor: cursor, lat: &latencies{}}
	}
}

func (r *benchRun) run(ctx context.Context) error {
	cfg := r.cfg
	startCursor, err := r.tail(ctx)
	if err != nil {
		return err
	}
	who := "the bench's account"
	if cfg.members {
		who = "each socket its own member with its own session"
	}
	fmt.Fprintf(r.out, "bench: %d sockets (%s) from %d source addresses in %s, %d posters at %.1f posts/s for %s into %s\n",
		cfg.sockets, who, cfg.sources, r.generatorsText(), cfg.posters, cfg.rate, cfg.duration, cfg.channel)
	natter := r.natterTarget(startCursor)
	fig, err := r.fanout(ctx, natter)
	if err != nil {
		return err
	}
	if cfg.reconnect {
		if err := r.reconnectAll(ctx, natter); err != nil {
			return err
		}
	}
	if !cfg.baseline {
		return nil
	}
	if err := r.set.closeAll(ctx); err != nil {
		return err
	}
	return r.compareBaseline(ctx, fig)
}

// generatorsText says where the sockets are held.
func (r *benchRun) generatorsText() string {
	if rs, ok := r.set.(*remoteSet); ok {
		return fmt.Sprintf("%d load-generator processes", len(rs.gens))
	}
	return "this process"
}

// rssSum is the resident memory of the processes together (-1: unknown).
func rssSum(pids []int) int64 {
	if len(pids) == 0 {
		return -1
	}
	var total int64
	for _, pid := range pids {
		v, err := rssBytes(pid)
		if err != nil {
			return -1
		}
		total += v
	}
	return total
}

// cpuSum is the CPU the processes spent so far together (-1: unknown).
func cpuSum(pids []int) time.Duration {
	if len(pids) == 0 {
		return -1
	}
	var total time.Duration
	for _, pid := range pids {
		v, err := procCPU(pid, false)
		if err != nil {
			return -1
		}
		total += v
	}
	return total
}

// descriptors describes each server process's open descriptors against its limit.
func descriptors(pids []int) string {
	var parts []string
	for _, pid := range pids {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
		limit := "?"
		if raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid)); err == nil {
			for _, line := range strings.Split(string(raw), "\n") {
				if f := strings.Fields(line); len(f) >= 5 && strings.HasPrefix(line, "Max open files") {
					limit = f[3]
				}
			}
		}
		parts = append(parts, fmt.Sprintf("pid %d: %d of %s", pid, len(fds), limit))
	}
	return strings.Join(parts, ", ")
}

// fanout connects every socket to the target, posts for the duration, waits for the last
// deliveries and reports.
func (r *benchRun) fanout(ctx context.Context, t fanoutTarget) (fanoutFigures, error) {
	cfg := r.cfg
	fig := fanoutFigures{serverCPU: -1, connectCPU: -1, perSocket: -1}
	rss0 := rssSum(t.pids)
	connectStart := time.Now()
	beforeConnect := cpuSum(t.pids)
	res, err := r.set.connect(ctx, t.spec)
	if err != nil {
		return fig, err
	}
	fig.connect = time.Since(connectStart)
	fig.sockets = res.Connected
	perConnect := ""
	if after := cpuSum(t.pids); after >= 0 && beforeConnect >= 0 && res.Connected > 0 {
		fig.connectCPU = after - beforeConnect
		perConnect = fmt.Sprintf("; server CPU %.0f µs per connect", float64(fig.connectCPU.Microseconds())/float64(res.Connected))
	}
	refusedText := ""
	if res.Refused > 0 {
		refusedText = fmt.Sprintf(", %d refused with 503 (the server's socket cap)", res.Refused)
	}
	fmt.Fprintf(r.out, "%s connect: %d of %d sockets in %s%s (handshake p50 %s, p99 %s%s)\n", t.name, res.Connected, r.set.size(),
		fig.connect.Round(time.Millisecond), refusedText, res.Handshakes.quantile(0.5).Round(time.Microsecond),
		res.Handshakes.quantile(0.99).Round(time.Microsecond), perConnect)
	if rss0 >= 0 && res.Connected > 0 {
		time.Sleep(2 * time.Second) // let the servers settle before reading their memory
		rss1 := rssSum(t.pids)
		fig.perSocket = float64(rss1-rss0) / float64(res.Connected)
		fmt.Fprintf(r.out, "%s memory: server RSS %.1f MiB -> %.1f MiB (%d processes), %.0f bytes per socket; descriptors %s\n", t.name,
			float64(rss0)/(1<<20), float64(rss1)/(1<<20), len(t.pids), fig.perSocket, descriptors(t.pids))
	}
	frames0, err := r.set.frames(ctx)
	if err != nil {
		return fig, err
	}
	cpu0 := r.generatorCPU()
	server0 := cpuSum(t.pids)
	postStart := time.Now()
	acked, failed := r.post(ctx, t, cfg.duration, cfg.rate)
	posted := time.Since(postStart)
	c, err := r.set.caughtUp(ctx, acked, cfg.drain)
	if err != nil {
		return fig, err
	}
	elapsed := time.Since(postStart)
	frames1, err := r.set.frames(ctx)
	if err != nil {
		return fig, err
	}
	frames, cpu := frames1-frames0, r.generatorCPU()-cpu0
	if server1 := cpuSum(t.pids); server1 >= 0 && server0 >= 0 {
		fig.serverCPU = server1 - server0
	}
	fig.frames = frames
	fmt.Fprintf(r.out, "%s posts: %d acknowledged (%.1f/s), %d failed\n", t.name, len(acked), float64(len(acked))/posted.Seconds(), failed)
	fmt.Fprintf(r.out, "%s deliveries: %d frames in %s (%.0f/s); last delivery %s after the last post%s\n", t.name, frames,
		elapsed.Round(time.Millisecond), float64(frames)/elapsed.Seconds(), c.Took.Round(time.Millisecond), map[bool]string{false: " (drain timed out)", true: ""}[c.OK])
	tl, err := r.reportDeliveries(ctx, t.name, acked)
	if err != nil {
		return fig, err
	}
	fig.p99, fig.lost, fig.dups = tl.Latency.quantile(0.99), tl.Lost, tl.Dups
	fig.acked = len(acked)
	if frames > 0 {
		line := fmt.Sprintf("%s CPU per delivered frame: load generator %.2f µs", t.name, float64(cpu.Microseconds())/float64(frames))
		if fig.serverCPU >= 0 {
			line += fmt.Sprintf(", server %.2f µs", float64(fig.serverCPU.Microseconds())/float64(frames))
		}
		fmt.Fprintln(r.out, line)
	}
	return fig, nil
}

// generatorCPU is the CPU spent so far by this process and its load-generator processes.
func (r *benchRun) generatorCPU() time.Duration {
	total := cpuTime()
	if rs, ok := r.set.(*remoteSet); ok {
		if c := cpuSum(rs.pids()); c > 0 {
			total += c
		}
	}
	return total
}

// reportDeliveries checks every acknowledged post against every connected socket and prints
// latency and integrity.
func (r *benchRun) reportDeliveries(ctx context.Context, name string, acked []int64) (tally, error) {
	t, err := r.set.account(ctx, acked)
	if err != nil {
		return t, err
	}
	h := &t.Latency
	fmt.Fprintf(r.out, "%s latency post-to-delivery: p50 %s, p99 %s, p999 %s over %d deliveries\n", name, h.quantile(0.5).Round(time.Microsecond),
		h.quantile(0.99).Round(time.Microsecond), h.quantile(0.999).Round(time.Microsecond), h.n)
	fmt.Fprintf(r.out, "%s integrity: %d lost (acknowledged, not delivered when the drain ended), %d duplicated, %d of %d sockets closed by the server (%d more ended without a close frame, %d of them after answering a ping within the %s before); load generators ran at most %s late\n",
		name, t.Lost, t.Dups, t.Closed, t.Sockets, t.Ended, t.Answered, reapWindow, t.Lag.Round(time.Millisecond))
	return t, nil
}

// reconnectAll drops every socket, posts a burst while they are away, reconnects them all at
// once from their cursors and measures until every socket has caught up.
func (r *benchRun) reconnectAll(ctx context.Context, t fanoutTarget) error {
	if err := r.set.closeAll(ctx); err != nil {
		return err
	}
	acked, _ := r.post(ctx, t, 2*time.Second, r.cfg.rate)
	start := time.Now()
	spec := t.spec
	spec.Resume = true
	res, err := r.set.connect(ctx, spec)
	if err != nil {
		return err
	}
	connected := time.Since(start)
	c, err := r.set.caughtUp(ctx, acked, 60*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(r.out, "reconnect: %d sockets back in %s (%d refused), all caught up on the %d posts made while away in %s%s\n", res.Connected,
		connected.Round(time.Millisecond), res.Refused, len(acked), (connected + c.Took).Round(time.Millisecond), map[bool]string{false: " (timed out)", true: ""}[c.OK])
	_, err = r.reportDeliveries(ctx, t.name, acked)
	return err
}
