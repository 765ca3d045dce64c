package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gobwas/ws"
)

// benchMarker prefixes the body of every message the bench posts, followed by the post's send
// time in unix nanoseconds and, after a colon, the post's number in this run, so a socket can
// measure post-to-delivery latency and tell which post a frame carries without reading cursors
// (they are opaque).
const benchMarker = "natter-bench-ts:"

// benchBody is the body of post number n sent now.
func benchBody(n int64) string {
	return benchMarker + strconv.FormatInt(time.Now().UnixNano(), 10) + ":" + strconv.FormatInt(n, 10)
}

// benchPostOf reads the send time and the number of a bench post from a frame.
func benchPostOf(p []byte) (sent time.Time, n int64, ok bool) {
	i := bytes.Index(p, []byte(benchMarker))
	if i < 0 {
		return time.Time{}, 0, false
	}
	rest := p[i+len(benchMarker):]
	digits := func() (int64, bool) {
		end := bytes.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if end < 0 {
			end = len(rest)
		}
		v, err := strconv.ParseInt(string(rest[:end]), 10, 64)
		rest = rest[end:]
		return v, err == nil
	}
	ns, ok := digits()
	if !ok || len(rest) == 0 || rest[0] != ':' {
		return time.Time{}, 0, false
	}
	rest = rest[1:]
	n, ok = digits()
	return time.Unix(0, ns), n, ok
}

// histogram counts durations in log-spaced buckets (about 1% apart) from 1µs to ~100s.
type histogram struct {
	counts [2000]uint64
	n      uint64
}

const histBase = 1.01

func (h *histogram) add(d time.Duration) {
	us := float64(d) / float64(time.Microsecond)
	i := 0
	if us > 1 {
		i = min(int(math.Log(us)/math.Log(histBase)), len(h.counts)-1)
	}
	h.counts[i]++
	h.n++
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// quantile returns the upper bound of the bucket holding quantile q.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(h.n)))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= want {
			return time.Duration(math.Pow(histBase, float64(i+1)) * float64(time.Microsecond))
		}
	}
	return time.Duration(math.Pow(histBase, float64(len(h.counts))) * float64(time.Microsecond))
}

// benchSocket is one client socket of the bench: a goroutine reads its frames and records which
// bench posts arrived and with what latency.
type benchSocket struct {
	source  net.IP
	conn    net.Conn
	mu      sync.Mutex
	cursor  string   // the last cursor received, opaque: the socket resumes after it
	seen    []uint64 // bench posts received, a bit per post number
	dups    int
	frames  int
	lat     *latencies // post-to-delivery, shared by the sockets of a set
	token   string     // its own session, when each socket is its own member
	refused bool       // its last handshake was refused with 503
	closed  chan struct{}
	closeBy ws.StatusCode
	// lastPong is when it last answered a ping of the server's, endedAt when its connection
	// ended without a close frame.
	lastPong, endedAt time.Time
	caught            chan struct{} // closed when every post of want has arrived
	want              []uint64
	missing           int
	keep              bool   // keep the last bench frame in sample (one socket does, for the baseline)
	sample            []byte // a frame as the server wrote it
}

func setBit(set *[]uint64, n int64) bool {
	for int(n/64) >= len(*set) {
		*set = append(*set, 0)
	}
	w, b := n/64, uint(n%64)
	if (*set)[w]&(1<<b) != 0 {
		return false
	}
	(*set)[w] |= 1 << b
	return true
}

func hasBit(set []uint64, n int64) bool {
	return n >= 0 && int(n/64) < len(set) && set[n/64]&(1<<uint(n%64)) != 0
}

func (s *benchSocket) has(n int64) bool { return hasBit(s.seen, n) }

// dial connects from the socket's source address.
func (s *benchSocket) dial(ctx context.Context, u string, header http.Header) error {
	d := ws.Dialer{Header: ws.HandshakeHeaderHTTP(header), Timeout: 30 * time.Second,
		NetDial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nd := net.Dialer{LocalAddr: &net.TCPAddr{IP: s.source}}
			return nd.DialContext(ctx, network, addr)
		}}
	conn, br, _, err := d.Dial(ctx, u)
	if errors.Is(err, ws.StatusError(http.StatusTooManyRequests)) {
		return fmt.Errorf("%w: the server caps sockets per account; start it with --max-sockets-per-user at least --sockets", err)
	}
	if err != nil {
		return err
	}
	var r io.Reader = conn
	if br != nil {
		r = io.MultiReader(br, conn)
	}
	s.conn, s.closed = conn, make(chan struct{})
	go s.read(r)
	return nil
}

// read is the socket's reader; it ends when the connection does.
func (s *benchSocket) read(r io.Reader) {
	defer close(s.closed)
	defer func() {
		s.mu.Lock()
		if s.closeBy == 0 {
			s.endedAt = time.Now()
		}
		s.mu.Unlock()
	}()
	buf := make([]byte, 4096)
	for {
		h, err := ws.ReadHeader(r)
		if err != nil {
			return
		}
		if int64(cap(buf)) < h.Length {
			buf = make([]byte, h.Length)
		}
		p := buf[:h.Length]
		if _, err := io.ReadFull(r, p); err != nil {
			return
		}
		switch h.OpCode {
		case ws.OpPing:
			if ws.WriteFrame(s.conn, ws.MaskFrame(ws.NewPongFrame(append([]byte(nil), p...)))) == nil {
				s.mu.Lock()
				s.lastPong = time.Now()
				s.mu.Unlock()
			}
		case ws.OpClose:
			code, _ := ws.ParseCloseFrameData(p)
			s.mu.Lock()
			s.closeBy = code
			s.mu.Unlock()
			return
		case ws.OpText:
			s.onEvent(p, time.Now())
		}
	}
}

// onEvent records a frame: its cursor (to resume from), and for bench posts duplicates and the
// latency from the post.
func (s *benchSocket) onEvent(p []byte, now time.Time) {
	cursor := cursorOf(p)
	sent, n, ok := benchPostOf(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frames++
	if cursor != "" {
		s.cursor = cursor
	}
	if !ok {
		return
	}
	if !setBit(&s.seen, n) {
		s.dups++
		return
	}
	s.lat.add(now.Sub(sent))
	if s.keep {
		s.sample = append(s.sample[:0], p...)
	}
	if s.caught != nil && hasBit(s.want, n) {
		if s.missing--; s.missing == 0 {
			close(s.caught)
			s.caught = nil
		}
	}
}

// cursorOf reads the envelope's cursor, an opaque string, without decoding the whole frame.
func cursorOf(p []byte) string {
	i := bytes.Index(p, []byte(`"cursor":"`))
	if i < 0 {
		return ""
	}
	rest := p[i+len(`"cursor":"`):]
	end := bytes.IndexByte(rest, '"')
	if end <= 0 {
		return ""
	}
	return string(rest[:end])
}

// API is a JSON client of a Natter server's API, for the bench and `natter watch`.
type API struct {
	Base   string // the server's base URL, without a trailing slash
	Token  string // bearer token; empty relies on the development fallback
	Client *http.Client
}

func (c *API) Do(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	if out != nil {
		return resp.StatusCode, json.Unmarshal(raw, out)
	}
	return resp.StatusCode, nil
}

// serverPID finds the process listening on a loopback TCP port through /proc.
func serverPID(port int) (int, error) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil && int(p) == port {
				inodes["socket:["+fields[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("no process listens on port %d", port)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range procs {
		if target, err := os.Readlink(fd); err == nil && inodes[target] {
			return strconv.Atoi(strings.Split(fd, "/")[2])
		}
	}
	return 0, errors.New("the listening process is not visible (run as its user or pass --server-pid)")
}

// rssBytes is a process's resident set size.
func rssBytes(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmRSS")
}

func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[min(len(ds)-1, int(math.Ceil(q*float64(len(ds))))-1)]
}
