package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"golang.org/x/sync/errgroup"
)

// A socket set is the bench's sockets, held in this process (localSet) or spread over
// load-generator processes (remoteSet, generators.go): a process may hold at most 20,000
// descriptors, so 100,000 sockets need several. Both answer the same questions, and the
// figures of a remote set are the merge of its generators' answers.
type socketSet interface {
	// connect opens every socket of the set to spec's URLs.
	connect(ctx context.Context, spec dialSpec) (connectResult, error)
	// frames is how many frames the sockets have received so far.
	frames(ctx context.Context) (int, error)
	// caughtUp waits until every connected socket has every post of acked, or within passes.
	caughtUp(ctx context.Context, acked []int64, within time.Duration) (caught, error)
	// account checks every connected socket against acked and starts a new latency count.
	account(ctx context.Context, acked []int64) (tally, error)
	// sample is a bench frame as the server wrote it (for the baseline), or nil.
	sample(ctx context.Context) ([]byte, error)
	// closeAll closes every socket; a later connect opens them again.
	closeAll(ctx context.Context) error
	// renew replaces the sockets by fresh ones, with no cursor (the baseline's run).
	renew(ctx context.Context) error
	size() int
}

// dialSpec is where the sockets connect: socket i (counted over the whole run) to
// URLs[i mod len(URLs)], with the header and, when it has one, after its own cursor (Resume) or
// after Cursor.
type dialSpec struct {
	URLs   []string          `json:"urls"`
	Header map[string]string `json:"header,omitempty"`
	Cursor string            `json:"cursor,omitempty"`
	Resume bool              `json:"resume,omitempty"`
	// Dialers bounds the handshakes in flight at once, per process.
	Dialers int `json:"dialers"`
}

// connectResult is what a connect phase did: its handshake times, and the sockets the server
// refused with 503 (past its socket cap), which the run then leaves out.
type connectResult struct {
	Connected  int       `json:"connected"`
	Refused    int       `json:"refused"`
	Handshakes histogram `json:"handshakes"`
}

func (c *connectResult) merge(o connectResult) {
	c.Connected += o.Connected
	c.Refused += o.Refused
	c.Handshakes.merge(&o.Handshakes)
}

// caught is how long the sockets took to receive every acknowledged post, and whether they all
// did before the drain ended.
type caught struct {
	Took time.Duration `json:"took"`
	OK   bool          `json:"ok"`
}

func (c *caught) merge(o caught) {
	c.Took = max(c.Took, o.Took)
	c.OK = c.OK && o.OK
}

// tally is what a set of sockets received of the acknowledged posts: a delivery is lost when a
// connected socket never received an acknowledged post, duplicated when it received one twice.
type tally struct {
	Sockets int `json:"sockets"` // connected sockets accounted
	Lost    int `json:"lost"`
	Dups    int `json:"dups"`
	// Closed is how many sockets the server closed with a close frame, Ended how many
	// connections ended otherwise (reset, or closed without one).
	Closed int `json:"closed"`
	Ended  int `json:"ended"`
	// Answered is how many of the Ended had answered a ping of the server's within the
	// reapWindow before they ended, and Lag how late this process's goroutines ran at worst
	// (the load generator's own delay): with both, a server that drops sockets is told apart
	// from a load generator too far behind to answer its pings.
	Answered int           `json:"answered"`
	Lag      time.Duration `json:"lag"`
	Latency  histogram     `json:"latency"`
}

// reapWindow is how long Natter waits for a sign of life before it takes a socket for
// half-open: two of its default 30-second ping intervals.
const reapWindow = 60 * time.Second

func (t *tally) merge(o tally) {
	t.Sockets += o.Sockets
	t.Lost += o.Lost
	t.Dups += o.Dups
	t.Closed += o.Closed
	t.Ended += o.Ended
	t.Answered += o.Answered
	t.Lag = max(t.Lag, o.Lag)
	t.Latency.merge(&o.Latency)
}

// MarshalJSON writes a histogram sparsely: [[bucket, count], …].
func (h histogram) MarshalJSON() ([]byte, error) {
	pairs := [][2]uint64{}
	for i, c := range h.counts {
		if c > 0 {
			pairs = append(pairs, [2]uint64{uint64(i), c})
		}
	}
	return json.Marshal(pairs)
}

func (h *histogram) UnmarshalJSON(raw []byte) error {
	var pairs [][2]uint64
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return err
	}
	*h = histogram{}
	for _, p := range pairs {
		if p[0] >= uint64(len(h.counts)) {
			return fmt.Errorf("histogram bucket %d out of range", p[0])
		}
		h.counts[p[0]] += p[1]
		h.n += p[1]
	}
	return nil
}

// latencies is a histogram the sockets of a set share (one per socket would cost 16 KB each,
// 1.6 GB at 100,000 sockets).
type latencies struct {
	mu sync.Mutex
	h  histogram
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.h.add(d)
	l.mu.Unlock()
}

// take returns the count so far and starts a new one.
func (l *latencies) take() histogram {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.h
	l.h = histogram{}
	return h
}

// localSet is sockets held by this process: sockets[i] is socket offset+i of the run.
type localSet struct {
	offset, count, sources int
	tokens                 []string // per socket (its own member's session), or none
	keep                   bool     // the first socket keeps a frame for the baseline
	sockets                []*benchSocket
	lat                    *latencies
	lag                    lagMeter
}

// lagMeter measures how late this process's goroutines run (a sleep's overshoot, ten times a
// second): a load generator starved of CPU reads the server's pings, and answers them, that late.
type lagMeter struct {
	mu    sync.Mutex
	worst time.Duration
	stop  chan struct{}
	done  chan struct{}
}

const lagPeriod = 100 * time.Millisecond

func (m *lagMeter) start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stop != nil {
		return
	}
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go func(stop, done chan struct{}) {
		defer close(done)
		for {
			began := time.Now()
			select {
			case <-stop:
				return
			case <-time.After(lagPeriod):
			}
			m.mu.Lock()
			m.worst = max(m.worst, time.Since(began)-lagPeriod)
			m.mu.Unlock()
		}
	}(m.stop, m.done)
}

func (m *lagMeter) end() {
	m.mu.Lock()
	stop, done := m.stop, m.done
	m.stop, m.done = nil, nil
	m.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// take returns the worst lag so far and starts a new count.
func (m *lagMeter) take() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.worst
	m.worst = 0
	return w
}

func newLocalSet(offset, count, sources int, tokens []string, keep bool) *localSet {
	l := &localSet{offset: offset, count: count, sources: sources, tokens: tokens, keep: keep}
	l.fresh()
	return l
}

// fresh makes the set's sockets anew, spread over the source addresses by their number in the
// run, each with its own session when the run has them.
func (l *localSet) fresh() {
	l.lat = &latencies{}
	l.sockets = make([]*benchSocket, l.count)
	for i := range l.sockets {
		g := l.offset + i
		s := &benchSocket{source: net.IPv4(127, 0, 0, byte(1+g%l.sources)), lat: l.lat}
		if i < len(l.tokens) {
			s.token = l.tokens[i]
		}
		l.sockets[i] = s
	}
	// Several keep a frame: any one of them may be gone by the time the baseline asks.
	for i := 0; l.keep && i < min(len(l.sockets), 64); i++ {
		l.sockets[i].keep = true
	}
}

func (l *localSet) size() int { return len(l.sockets) }

// refused is a handshake the server answered 503: past its socket cap (or its descriptors).
func refused(err error) bool { return errors.Is(err, ws.StatusError(http.StatusServiceUnavailable)) }

func (l *localSet) connect(ctx context.Context, spec dialSpec) (connectResult, error) {
	l.lag.start()
	var res connectResult
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(spec.Dialers, 1))
	for i, s := range l.sockets {
		g.Go(func() error {
			n := l.offset + i
			header := http.Header{}
			for k, v := range spec.Header {
				header.Set(k, v)
			}
			if s.token != "" {
				header.Set("Authorization", "Bearer "+s.token)
			}
			s.mu.Lock()
			cursor := s.cursor
			s.mu.Unlock()
			if !spec.Resume {
				cursor = spec.Cursor
			}
			u := spec.URLs[n%len(spec.URLs)]
			if cursor != "" {
				sep := "?"
				if strings.Contains(u, "?") {
					sep = "&"
				}
				u += sep + "after_cursor=" + cursor
			}
			start := time.Now()
			err := s.dial(gctx, u, header)
			took := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				s.refused = false
				res.Connected++
				res.Handshakes.add(took)
			case refused(err):
				s.refused = true
				res.Refused++
			default:
				return fmt.Errorf("bench: socket %d from %s: %w", n, s.source, err)
			}
			return nil
		})
	}
	return res, g.Wait()
}

func (l *localSet) frames(context.Context) (int, error) {
	n := 0
	for _, s := range l.sockets {
		s.mu.Lock()
		n += s.frames
		s.mu.Unlock()
	}
	return n, nil
}

func (l *localSet) caughtUp(ctx context.Context, acked []int64, within time.Duration) (caught, error) {
	start := time.Now()
	var want []uint64
	for _, n := range acked {
		setBit(&want, n)
	}
	chans := make([]chan struct{}, 0, len(l.sockets))
	for _, s := range l.sockets {
		if s.refused {
			continue
		}
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
			return caught{Took: time.Since(start)}, nil
		case <-ctx.Done():
			return caught{Took: time.Since(start)}, ctx.Err()
		}
	}
	return caught{Took: time.Since(start), OK: true}, nil
}

func (l *localSet) account(_ context.Context, acked []int64) (tally, error) {
	var t tally
	for _, s := range l.sockets {
		if s.refused {
			continue
		}
		s.mu.Lock()
		t.Sockets++
		for _, n := range acked {
			if !s.has(n) {
				t.Lost++
			}
		}
		t.Dups += s.dups
		s.dups = 0
		if s.closeBy != 0 {
			t.Closed++
		} else if s.conn != nil {
			select {
			case <-s.closed:
				t.Ended++
				if !s.lastPong.IsZero() && s.endedAt.Sub(s.lastPong) < reapWindow {
					t.Answered++
				}
			default:
			}
		}
		s.mu.Unlock()
	}
	t.Latency = l.lat.take()
	t.Lag = l.lag.take()
	return t, nil
}

func (l *localSet) sample(context.Context) ([]byte, error) {
	for _, s := range l.sockets {
		s.mu.Lock()
		p := append([]byte(nil), s.sample...)
		s.mu.Unlock()
		if len(p) > 0 {
			return p, nil
		}
	}
	return nil, nil
}

func (l *localSet) closeAll(context.Context) error {
	l.lag.end()
	for _, s := range l.sockets {
		if s.conn != nil {
			_ = s.conn.Close()
			<-s.closed
			s.conn = nil
		}
	}
	return nil
}

func (l *localSet) renew(ctx context.Context) error {
	_ = l.closeAll(ctx)
	l.fresh()
	return nil
}
