package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/urfave/cli/v2"
	"golang.org/x/sync/errgroup"
)

// The baseline is the physical limit of the machine for the fan-out bench: a bare gobwas/ws
// server that upgrades every request without a check and writes each frame it is given to every
// socket, with no database, no NATS and no queue. It runs as a child process of the bench so its
// CPU can be read from /proc apart from the load generator's.

// BaselineCommand is the hidden `natter bench-baseline-server` that `natter bench --baseline`
// starts as its child.
func BaselineCommand() *cli.Command {
	return &cli.Command{
		Name:   "bench-baseline-server",
		Hidden: true,
		Usage:  "the bare WebSocket server `natter bench --baseline` starts; it runs until its standard input closes",
		Action: runBaselineServer,
	}
}

func runBaselineServer(c *cli.Context) error {
	raiseFileLimit()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	drop := func(conn net.Conn) {
		mu.Lock()
		delete(conns, conn)
		mu.Unlock()
		_ = conn.Close()
	}
	frames := make(chan []byte, 4096)
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		conn, _, _, err := ws.UpgradeHTTP(r, w)
		if err != nil {
			return
		}
		mu.Lock()
		conns[conn] = true
		mu.Unlock()
		go func() {
			// The clients only ever close; anything read ends or is discarded.
			for {
				h, err := ws.ReadHeader(conn)
				if err == nil {
					_, err = io.CopyN(io.Discard, conn, h.Length)
				}
				if err != nil || h.OpCode == ws.OpClose {
					drop(conn)
					return
				}
			}
		}()
	})
	mux.HandleFunc("/frame", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		frame, err := ws.CompileFrame(ws.NewTextFrame(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// Answered at once and written by one goroutine in arrival order, as Natter answers a
		// post before its fan-out.
		frames <- frame
		w.WriteHeader(http.StatusNoContent)
	})
	go func() {
		for frame := range frames {
			mu.Lock()
			targets := make([]net.Conn, 0, len(conns))
			for conn := range conns {
				targets = append(targets, conn)
			}
			mu.Unlock()
			for _, conn := range targets {
				if _, err := conn.Write(frame); err != nil {
					drop(conn)
				}
			}
		}
	}()
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(c.App.Writer, "listening %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return srv.Close()
}

// startBaseline starts the baseline server and returns its address and a stop function.
func startBaseline(ctx context.Context) (addr string, pid int, stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.CommandContext(ctx, self, "bench-baseline-server")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", 0, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
	}
	stop = func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		stop()
		return "", 0, nil, fmt.Errorf("bench: the baseline server did not start: %q %v", line, err)
	}
	return addr, cmd.Process.Pid, stop, nil
}

// withPost puts bench post n into a frame Natter wrote: the same bytes but for the body's send
// time and number.
func withPost(sample []byte, n int64) []byte {
	i := bytes.Index(sample, []byte(benchMarker))
	if i < 0 {
		return sample
	}
	end := i + len(benchMarker)
	for end < len(sample) && (sample[end] >= '0' && sample[end] <= '9' || sample[end] == ':') {
		end++
	}
	out := make([]byte, 0, len(sample)+8)
	out = append(out, sample[:i]...)
	out = append(out, benchBody(n)...)
	return append(out, sample[end:]...)
}

// baselineServers is how many baseline servers the run needs: one per Natter server, and
// enough that none holds more sockets than its descriptors allow.
func baselineServers(natterServers, sockets int) int {
	return max(natterServers, 1, (sockets+generatorSockets-1)/generatorSockets)
}

// compareBaseline runs the same fan-out against baseline servers (as many as Natter had, or as
// the sockets need) and prints Natter's figures as ratios of the baseline's.
func (r *benchRun) compareBaseline(ctx context.Context, natter fanoutFigures) error {
	sample, err := r.set.sample(ctx)
	if err != nil {
		return err
	}
	if len(sample) == 0 {
		return errors.New("bench: no Natter frame was received to give the baseline; run with --sockets ≥ 1")
	}
	n := baselineServers(len(r.cfg.bases), r.set.size())
	var addrs []string
	var pids []int
	for range n {
		addr, pid, stop, err := startBaseline(ctx)
		if err != nil {
			return err
		}
		defer stop()
		addrs, pids = append(addrs, addr), append(pids, pid)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: benchMaxPosters}}
	defer client.CloseIdleConnections()
	send := func(ctx context.Context, addr string, frame []byte) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/frame", bytes.NewReader(frame))
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			return fmt.Errorf("baseline: status %d", resp.StatusCode)
		}
		return nil
	}
	var urls []string
	for _, addr := range addrs {
		urls = append(urls, "ws://"+addr+"/ws")
	}
	target := fanoutTarget{name: "baseline", pids: pids, spec: dialSpec{URLs: urls, Dialers: r.cfg.dialers},
		// A post is acknowledged once every server has it, as Natter's replicas all get each
		// event from NATS.
		post: func(ctx context.Context, n int64) error {
			frame := withPost(sample, n)
			g, gctx := errgroup.WithContext(ctx)
			for _, addr := range addrs {
				g.Go(func() error { return send(gctx, addr, frame) })
			}
			return g.Wait()
		}}
	fmt.Fprintf(r.out, "baseline: %d bare gobwas/ws servers (pids %v) on %v, the same %d sockets, posters and %d-byte frames\n",
		n, pids, addrs, r.set.size(), len(sample))
	if err := r.set.renew(ctx); err != nil {
		return err
	}
	base, err := r.fanout(ctx, target)
	if err != nil {
		return err
	}
	ratio := func(a, b float64) string {
		if b <= 0 || a < 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f×", a/b)
	}
	perFrame := func(f fanoutFigures) float64 {
		if f.serverCPU < 0 || f.frames == 0 {
			return -1
		}
		return float64(f.serverCPU.Microseconds()) / float64(f.frames)
	}
	perConnect := func(f fanoutFigures) float64 {
		if f.connectCPU < 0 || f.sockets == 0 {
			return -1
		}
		return float64(f.connectCPU.Microseconds()) / float64(f.sockets)
	}
	fmt.Fprintf(r.out, "natter / baseline: connect time %s (%s / %s), server CPU per connect %s (%.0f / %.0f µs), server CPU per delivered frame %s (%.2f / %.2f µs), p99 %s (%s / %s), bytes per socket %s (%.0f / %.0f)\n",
		ratio(float64(natter.connect), float64(base.connect)), natter.connect.Round(time.Millisecond), base.connect.Round(time.Millisecond),
		ratio(perConnect(natter), perConnect(base)), perConnect(natter), perConnect(base),
		ratio(perFrame(natter), perFrame(base)), perFrame(natter), perFrame(base),
		ratio(float64(natter.p99), float64(base.p99)), natter.p99.Round(time.Microsecond), base.p99.Round(time.Microsecond),
		ratio(natter.perSocket, base.perSocket), natter.perSocket, base.perSocket)
	return nil
}
