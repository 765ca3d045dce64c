package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

// fanoutTarget is what the fan-out phase loads: Natter, or the bare baseline server.
type fanoutTarget struct {
	name string
	pid  int // the server process, for its CPU (0: unknown)
	// wsURL is where a socket connects, resuming after its cursor.
	wsURL  func(cursor string) string
	header http.Header
	// post sends bench post number n; its error says the post was not acknowledged.
	post func(ctx context.Context, n int64) error
}

// fanoutFigures are what a fan-out phase measured, for the comparison with the baseline.
type fanoutFigures struct {
	connect   time.Duration
	p99       time.Duration
	frames    int
	serverCPU time.Duration // -1: unknown
	// connectCPU is the server's CPU while the sockets connected (-1: unknown): less swayed by
	// other jobs on a shared machine than the connect time.
	connectCPU  time.Duration
	acked, lost int
}

// natterTarget posts into the bench channel and connects to the workspace's realtime socket.
func (r *benchRun) natterTarget() fanoutTarget {
	header := http.Header{}
	if r.cfg.token != "" {
		header.Set("Authorization", "Bearer "+r.cfg.token)
	}
	return fanoutTarget{name: "natter", pid: r.cfg.pid, header: header,
		wsURL: func(cursor string) string {
			base := r.cfg.bases[int(r.dials.Add(1)-1)%len(r.cfg.bases)]
			u := "ws" + strings.TrimPrefix(base, "http") + "/api/realtime/ws?workspace_id=" + url.QueryEscape(r.cfg.workspace)
			if cursor != "" {
				u += "&after_cursor=" + url.QueryEscape(cursor)
			}
			return u
		},
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

// connect opens every socket (at most connect-concurrency handshakes at once) and returns the
// handshake durations.
func (r *benchRun) connect(ctx context.Context, t fanoutTarget, sockets []*benchSocket) ([]time.Duration, error) {
	took := make([]time.Duration, len(sockets))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.dialers)
	for i, s := range sockets {
		g.Go(func() error {
			start := time.Now()
			s.mu.Lock()
			u := t.wsURL(s.cursor)
			s.mu.Unlock()
			if err := s.dial(gctx, u, t.header); err != nil {
				return fmt.Errorf("bench: %s socket %d from %s: %w", t.name, i, s.source, err)
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

// waitCaughtUp blocks until every socket has received every acknowledged post or the drain
// time passes, and returns how long that took.
func (r *benchRun) waitCaughtUp(ctx context.Context, acked []int64, within time.Duration) (time.Duration, bool) {
	start := time.Now()
	var want []uint64
	for _, n := range acked {
		setBit(&want, n)
	}
	chans := make([]chan struct{}, 0, len(r.sockets))
	for _, s := range r.sockets {
		s.mu.Lock()
		missing := 0
		for _, n := range acked {
			if !s.has(n) {
				missing++
			}
		}
		if missing > 0 {
			ch := make(chan struct{})
			s.caught, s.want, s.missing = ch, want, missing
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

// newSockets makes the bench's sockets, spread over the source addresses, resuming after cursor.
func (r *benchRun) newSockets(cursor string) {
	r.sockets = make([]*benchSocket, r.cfg.sockets)
	for i := range r.sockets {
		r.sockets[i] = &benchSocket{source: net.IPv4(127, 0, 0, byte(1+i%r.cfg.sources)), cursor: cursor}
	}
}

func (r *benchRun) run(ctx context.Context) error {
	cfg := r.cfg
	rssBefore, _ := rssBytes(cfg.pid)
	startCursor, err := r.tail(ctx)
	if err != nil {
		return err
	}
	r.newSockets(startCursor)
	if len(r.sockets) > 0 {
		r.sockets[0].keep = true // its frames give the baseline the frame to write
	}
	fmt.Fprintf(r.out, "bench: %d sockets from %d source addresses, %d posters at %.1f posts/s for %s into %s\n",
		cfg.sockets, cfg.sources, cfg.posters, cfg.rate, cfg.duration, cfg.channel)
	natter := r.natterTarget()
	fig, err := r.fanout(ctx, natter, func() {
		if cfg.pid > 0 && cfg.sockets > 0 {
			time.Sleep(2 * time.Second) // let the server settle before reading its memory
			rssAfter, _ := rssBytes(cfg.pid)
			fmt.Fprintf(r.out, "memory: server RSS %.1f MiB -> %.1f MiB, %.0f bytes per socket\n", float64(rssBefore)/(1<<20),
				float64(rssAfter)/(1<<20), float64(rssAfter-rssBefore)/float64(cfg.sockets))
		}
	})
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
	r.closeAll()
	return r.compareBaseline(ctx, fig)
}

// fanout connects every socket to the target, posts for the duration, waits for the last
// deliveries and reports.
func (r *benchRun) fanout(ctx context.Context, t fanoutTarget, settled func()) (fanoutFigures, error) {
	cfg := r.cfg
	fig := fanoutFigures{serverCPU: -1, connectCPU: -1}
	connectStart := time.Now()
	beforeConnect, cpuErr := procCPU(t.pid, false)
	took, err := r.connect(ctx, t, r.sockets)
	if err != nil {
		return fig, err
	}
	fig.connect = time.Since(connectStart)
	perConnect := ""
	if afterConnect, err := procCPU(t.pid, false); t.pid > 0 && err == nil && cpuErr == nil && cfg.sockets > 0 {
		fig.connectCPU = afterConnect - beforeConnect
		perConnect = fmt.Sprintf("; server CPU %.0f µs per connect", float64(fig.connectCPU.Microseconds())/float64(cfg.sockets))
	}
	fmt.Fprintf(r.out, "%s connect: %d sockets in %s (handshake p50 %s, p99 %s%s)\n", t.name, cfg.sockets, fig.connect.Round(time.Millisecond),
		percentile(took, 0.5).Round(time.Microsecond), percentile(took, 0.99).Round(time.Microsecond), perConnect)
	if settled != nil {
		settled()
	}
	frames0, cpu0 := r.frames(), cpuTime()
	server0, serverErr := procCPU(t.pid, false)
	postStart := time.Now()
	acked, failed := r.post(ctx, t, cfg.duration, cfg.rate)
	posted := time.Since(postStart)
	caughtIn, ok := r.waitCaughtUp(ctx, acked, cfg.drain)
	elapsed := time.Since(postStart)
	frames, cpu := r.frames()-frames0, cpuTime()-cpu0
	if server1, err := procCPU(t.pid, false); t.pid > 0 && err == nil && serverErr == nil {
		fig.serverCPU = server1 - server0
	}
	fig.frames = frames
	fmt.Fprintf(r.out, "%s posts: %d acknowledged (%.1f/s), %d failed\n", t.name, len(acked), float64(len(acked))/posted.Seconds(), failed)
	fmt.Fprintf(r.out, "%s deliveries: %d frames in %s (%.0f/s); last delivery %s after the last post%s\n", t.name, frames,
		elapsed.Round(time.Millisecond), float64(frames)/elapsed.Seconds(), caughtIn.Round(time.Millisecond), map[bool]string{false: " (drain timed out)", true: ""}[ok])
	fig.p99, fig.lost = r.reportDeliveries(t.name, acked)
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

func (r *benchRun) frames() int {
	n := 0
	for _, s := range r.sockets {
		s.mu.Lock()
		n += s.frames
		s.mu.Unlock()
	}
	return n
}

// reportDeliveries checks every acknowledged post against every socket, prints latency and
// integrity, and returns the p99 and the number of lost deliveries.
func (r *benchRun) reportDeliveries(name string, acked []int64) (time.Duration, int) {
	var lost, dups int
	var hist histogram
	closed := 0
	for _, s := range r.sockets {
		s.mu.Lock()
		for _, n := range acked {
			if !s.has(n) {
				lost++
			}
		}
		dups += s.dups
		hist.merge(&s.hist)
		s.hist = histogram{}
		if s.closeBy != 0 {
			closed++
		}
		s.mu.Unlock()
	}
	p99 := hist.quantile(0.99)
	fmt.Fprintf(r.out, "%s latency post-to-delivery: p50 %s, p99 %s, p999 %s over %d deliveries\n", name, hist.quantile(0.5).Round(time.Microsecond),
		p99.Round(time.Microsecond), hist.quantile(0.999).Round(time.Microsecond), hist.n)
	fmt.Fprintf(r.out, "%s integrity: %d lost (acknowledged, not delivered when the drain ended), %d duplicated, %d sockets closed by the server\n",
		name, lost, dups, closed)
	return p99, lost
}

// reconnectAll drops every socket, posts a burst while they are away, reconnects them all at
// once from their cursors and measures until every socket has caught up.
func (r *benchRun) reconnectAll(ctx context.Context, t fanoutTarget) error {
	r.closeAll()
	acked, _ := r.post(ctx, t, 2*time.Second, r.cfg.rate)
	start := time.Now()
	if _, err := r.connect(ctx, t, r.sockets); err != nil {
		return err
	}
	connected := time.Since(start)
	caught, ok := r.waitCaughtUp(ctx, acked, 60*time.Second)
	fmt.Fprintf(r.out, "reconnect: %d sockets back in %s, all caught up on the %d posts made while away in %s%s\n", len(r.sockets),
		connected.Round(time.Millisecond), len(acked), (connected + caught).Round(time.Millisecond), map[bool]string{false: " (timed out)", true: ""}[ok])
	r.reportDeliveries(t.name, acked)
	return nil
}
