package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sync/errgroup"
)

// A run of more sockets than one process may hold (20,000 descriptors here, a hard limit) is
// spread over load-generator processes, `natter bench-generator` children of the bench: each
// holds a contiguous share of the sockets as a localSet and answers the coordinator's requests,
// one JSON line each way per request, on its standard input and output. The coordinator posts,
// and merges the answers: the figures of the run are those of one set holding every socket.

// generatorSockets is how many sockets one load-generator process holds at most: its
// descriptors less a margin for its standard streams and runtime.
const generatorSockets = 19000

// genRequest is one request to a load generator.
type genRequest struct {
	Op string `json:"op"` // init, connect, frames, caught, account, sample, close, renew
	// init
	Offset  int      `json:"offset,omitempty"`
	Count   int      `json:"count,omitempty"`
	Sources int      `json:"sources,omitempty"`
	Tokens  []string `json:"tokens,omitempty"`
	Keep    bool     `json:"keep,omitempty"`
	// connect
	Spec *dialSpec `json:"spec,omitempty"`
	// caught, account
	Acked  []int64       `json:"acked,omitempty"`
	Within time.Duration `json:"within,omitempty"`
}

// genReply is a load generator's answer to one request.
type genReply struct {
	Err     string         `json:"err,omitempty"`
	PID     int            `json:"pid,omitempty"`
	Connect *connectResult `json:"connect,omitempty"`
	Frames  int            `json:"frames,omitempty"`
	Caught  *caught        `json:"caught,omitempty"`
	Tally   *tally         `json:"tally,omitempty"`
	Sample  []byte         `json:"sample,omitempty"`
}

// GeneratorCommand is the hidden `natter bench-generator` that `natter bench` starts for each
// share of its sockets.
func GeneratorCommand() *cli.Command {
	return &cli.Command{
		Name:   "bench-generator",
		Hidden: true,
		Usage:  "a load generator of `natter bench`: holds a share of its sockets, driven on standard input and output",
		Action: func(c *cli.Context) error {
			raiseFileLimit()
			return serveGenerator(c.Context, c.App.Reader, c.App.Writer)
		},
	}
}

// serveGenerator answers a coordinator's requests until its input ends, then closes its sockets.
func serveGenerator(ctx context.Context, in io.Reader, out io.Writer) error {
	dec := json.NewDecoder(bufio.NewReaderSize(in, 1<<20))
	enc := json.NewEncoder(out)
	var set *localSet
	defer func() {
		if set != nil {
			_ = set.closeAll(ctx)
		}
	}()
	for {
		var req genRequest
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("bench-generator: read a request: %w", err)
		}
		var rep genReply
		var err error
		switch {
		case req.Op == "init":
			set = newLocalSet(req.Offset, req.Count, req.Sources, req.Tokens, req.Keep)
			rep.PID = os.Getpid()
		case set == nil:
			err = errors.New("the first request must be init")
		case req.Op == "connect" && req.Spec != nil:
			var res connectResult
			res, err = set.connect(ctx, *req.Spec)
			rep.Connect = &res
		case req.Op == "frames":
			rep.Frames, err = set.frames(ctx)
		case req.Op == "caught":
			var c caught
			c, err = set.caughtUp(ctx, req.Acked, req.Within)
			rep.Caught = &c
		case req.Op == "account":
			var t tally
			t, err = set.account(ctx, req.Acked)
			rep.Tally = &t
		case req.Op == "sample":
			rep.Sample, err = set.sample(ctx)
		case req.Op == "close":
			err = set.closeAll(ctx)
		case req.Op == "renew":
			err = set.renew(ctx)
		default:
			err = fmt.Errorf("unknown request %q", req.Op)
		}
		if err != nil {
			rep.Err = err.Error()
		}
		if err := enc.Encode(rep); err != nil {
			return err
		}
	}
}

// generator is the coordinator's end of one load generator.
type generator struct {
	pid  int
	in   io.WriteCloser
	out  *json.Decoder
	enc  *json.Encoder
	stop func() error
}

func (g *generator) call(req genRequest) (genReply, error) {
	var rep genReply
	if err := g.enc.Encode(req); err != nil {
		return rep, fmt.Errorf("bench: load generator %d: %w", g.pid, err)
	}
	if err := g.out.Decode(&rep); err != nil {
		return rep, fmt.Errorf("bench: load generator %d did not answer %s: %w", g.pid, req.Op, err)
	}
	if rep.Err != "" {
		return rep, fmt.Errorf("bench: load generator %d: %s", g.pid, rep.Err)
	}
	return rep, nil
}

// spawnFunc starts one load generator and returns its input, its output and how to wait for it.
type spawnFunc func(ctx context.Context) (in io.WriteCloser, out io.Reader, wait func() error, err error)

// spawnProcess runs `natter bench-generator` as a child process.
func spawnProcess(ctx context.Context) (io.WriteCloser, io.Reader, func() error, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, nil, err
	}
	cmd := exec.CommandContext(ctx, self, "bench-generator")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, err
	}
	return in, out, cmd.Wait, nil
}

// spawnInProcess runs a load generator as goroutines of this process, speaking the same
// protocol through pipes (--generators-in-process: for tests, which cannot exec the binary).
func spawnInProcess(ctx context.Context) (io.WriteCloser, io.Reader, func() error, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := serveGenerator(context.WithoutCancel(ctx), inR, outW)
		_ = outW.CloseWithError(err)
		_ = inR.Close()
		done <- err
	}()
	return inW, outR, func() error { return <-done }, nil
}

// remoteSet is the run's sockets spread over load generators: generator k holds sockets
// [k·share, (k+1)·share) of the run.
type remoteSet struct {
	gens  []*generator
	total int
}

// startGenerators starts n load generators for count sockets and gives each its share (and its
// sockets' sessions, when tokens has one per socket).
func startGenerators(ctx context.Context, spawn spawnFunc, n, count, sources int, tokens []string) (*remoteSet, error) {
	rs := &remoteSet{total: count}
	share := (count + n - 1) / n
	for k := range n {
		from, to := min(k*share, count), min((k+1)*share, count)
		in, out, wait, err := spawn(ctx)
		if err != nil {
			_ = rs.stop()
			return nil, err
		}
		g := &generator{in: in, out: json.NewDecoder(out), enc: json.NewEncoder(in)}
		g.stop = func() error { _ = in.Close(); return wait() }
		rs.gens = append(rs.gens, g)
		req := genRequest{Op: "init", Offset: from, Count: to - from, Sources: sources, Keep: k == 0}
		if len(tokens) == count {
			req.Tokens = tokens[from:to]
		}
		rep, err := g.call(req)
		if err != nil {
			_ = rs.stop()
			return nil, err
		}
		g.pid = rep.PID
	}
	return rs, nil
}

// stop ends every load generator (its sockets close with it).
func (rs *remoteSet) stop() error {
	var errs []error
	for _, g := range rs.gens {
		errs = append(errs, g.stop())
	}
	return errors.Join(errs...)
}

func (rs *remoteSet) pids() []int {
	var out []int
	for _, g := range rs.gens {
		out = append(out, g.pid)
	}
	return out
}

func (rs *remoteSet) size() int { return rs.total }

// all sends req to every generator at once and hands each answer to merge, one at a time.
func (rs *remoteSet) all(ctx context.Context, req genRequest, merge func(genReply)) error {
	var mu sync.Mutex
	g, _ := errgroup.WithContext(ctx)
	for _, gen := range rs.gens {
		g.Go(func() error {
			rep, err := gen.call(req)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if merge != nil {
				merge(rep)
			}
			return nil
		})
	}
	return g.Wait()
}

func (rs *remoteSet) connect(ctx context.Context, spec dialSpec) (connectResult, error) {
	var res connectResult
	err := rs.all(ctx, genRequest{Op: "connect", Spec: &spec}, func(r genReply) {
		if r.Connect != nil {
			res.merge(*r.Connect)
		}
	})
	return res, err
}

func (rs *remoteSet) frames(ctx context.Context) (int, error) {
	n := 0
	err := rs.all(ctx, genRequest{Op: "frames"}, func(r genReply) { n += r.Frames })
	return n, err
}

func (rs *remoteSet) caughtUp(ctx context.Context, acked []int64, within time.Duration) (caught, error) {
	c := caught{OK: true}
	err := rs.all(ctx, genRequest{Op: "caught", Acked: acked, Within: within}, func(r genReply) {
		if r.Caught != nil {
			c.merge(*r.Caught)
		} else {
			c.OK = false
		}
	})
	return c, err
}

func (rs *remoteSet) account(ctx context.Context, acked []int64) (tally, error) {
	var t tally
	err := rs.all(ctx, genRequest{Op: "account", Acked: acked}, func(r genReply) {
		if r.Tally != nil {
			t.merge(*r.Tally)
		}
	})
	return t, err
}

func (rs *remoteSet) sample(ctx context.Context) ([]byte, error) {
	var p []byte
	err := rs.all(ctx, genRequest{Op: "sample"}, func(r genReply) {
		if len(p) == 0 {
			p = r.Sample
		}
	})
	return p, err
}

func (rs *remoteSet) closeAll(ctx context.Context) error {
	return rs.all(ctx, genRequest{Op: "close"}, nil)
}

func (rs *remoteSet) renew(ctx context.Context) error {
	return rs.all(ctx, genRequest{Op: "renew"}, nil)
}
