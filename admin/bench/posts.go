package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// runPosts is `natter bench --mode posts`: posting alone, no sockets. Posters post at the target
// rate across them, or each as soon as its last post was answered (--closed-loop); the bench
// reports posts/s, the latency of a post's answer, refusals by status, and the CPU the server and
// Postgres spent per acknowledged post, read from /proc before and after.
func (r *benchRun) runPosts(ctx context.Context) error {
	cfg := r.cfg
	mode := fmt.Sprintf("at %.1f posts/s", cfg.rate)
	if cfg.closedLoop {
		mode = "closed loop"
	}
	fmt.Fprintf(r.out, "bench posts: %d posters, %s, for %s into %s\n", cfg.posters, mode, cfg.duration, cfg.channel)
	seq0, err := r.newestSeq(ctx)
	if err != nil {
		return err
	}
	server0, pg0 := r.cpuSample()
	res := r.postLoad(ctx, cfg.duration, cfg.rate, cfg.closedLoop)
	server1, pg1 := r.cpuSample()
	defer r.verifyStored(ctx, seq0, res.acked)
	n := len(res.latencies)
	fmt.Fprintf(r.out, "posts: %d acknowledged in %s (%.1f/s), %d failed %s\n", n, res.elapsed.Round(time.Millisecond),
		float64(n)/res.elapsed.Seconds(), res.failed(), res.statuses())
	fmt.Fprintf(r.out, "latency of an acknowledged post: p50 %s, p99 %s, p999 %s, max %s\n",
		percentile(res.latencies, 0.5).Round(time.Microsecond), percentile(res.latencies, 0.99).Round(time.Microsecond),
		percentile(res.latencies, 0.999).Round(time.Microsecond), percentile(res.latencies, 1).Round(time.Microsecond))
	if len(res.refusals) > 0 {
		fmt.Fprintf(r.out, "latency of a failed post: p50 %s, p99 %s, max %s\n", percentile(res.refusals, 0.5).Round(time.Microsecond),
			percentile(res.refusals, 0.99).Round(time.Microsecond), percentile(res.refusals, 1).Round(time.Microsecond))
	}
	if n == 0 {
		return nil
	}
	per := func(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d.Microseconds())/1000/float64(n)) }
	line := "CPU per acknowledged post:"
	if server0 >= 0 && server1 >= 0 {
		line += " server " + per(server1-server0)
	} else {
		line += " server unknown (pass --server-pid)"
	}
	if pg0 >= 0 && pg1 >= 0 {
		line += ", Postgres " + per(pg1-pg0)
	} else {
		line += ", Postgres unknown (pass --postgres-pid or --postgres-data-dir)"
	}
	fmt.Fprintf(r.out, "%s, load generator %s\n", line, per(res.cpu))
	return nil
}

// postResult is what a round of posting saw.
type postResult struct {
	latencies []time.Duration // acknowledged posts
	acked     []string        // their nonces
	refusals  []time.Duration // posts answered with an error or not at all
	status    map[string]int  // failures by status ("no answer" when the request itself failed)
	elapsed   time.Duration
	cpu       time.Duration // the load generator's own
}

func (p postResult) failed() int { return len(p.refusals) }

func (p postResult) statuses() string {
	if len(p.status) == 0 {
		return ""
	}
	keys := make([]string, 0, len(p.status))
	for k := range p.status {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, p.status[k])
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// postLoad runs the posters for duration: at rate across them, or closed loop.
func (r *benchRun) postLoad(ctx context.Context, duration time.Duration, rate float64, closed bool) postResult {
	var mu sync.Mutex
	res := postResult{status: map[string]int{}}
	interval := time.Duration(float64(time.Second) * float64(r.cfg.posters) / rate)
	cpu0 := cpuTime()
	start := time.Now()
	deadline := start.Add(duration)
	var wg sync.WaitGroup
	for p := 0; p < r.cfg.posters; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := start.Add(time.Duration(p) * interval / time.Duration(r.cfg.posters))
			for {
				if !closed {
					if next.After(deadline) {
						return
					}
					time.Sleep(time.Until(next))
					next = next.Add(interval)
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					return
				}
				n := r.posts.Add(1)
				nonce := fmt.Sprintf("bench-%d-%d", start.UnixNano(), n)
				body := map[string]string{"body": benchBody(n), "nonce": nonce}
				sent := time.Now()
				status, err := r.api.Do(ctx, http.MethodPost, "/api/channels/"+r.cfg.channel+"/messages", body, nil)
				took := time.Since(sent)
				mu.Lock()
				if err == nil {
					res.latencies = append(res.latencies, took)
					res.acked = append(res.acked, nonce)
				} else {
					res.refusals = append(res.refusals, took)
					key := "no answer"
					if status != 0 {
						key = strconv.Itoa(status)
					}
					if res.status[key]++; res.status[key] == 1 {
						fmt.Fprintf(r.out, "post failed (%s; further failures are only counted): %v\n", key, err)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.elapsed, res.cpu = time.Since(start), cpuTime()-cpu0
	return res
}

// benchVerifyMax bounds the acknowledged posts the bench reads back.
const benchVerifyMax = 50000

// newestSeq is the channel's newest channel_seq (0: empty).
func (r *benchRun) newestSeq(ctx context.Context) (int64, error) {
	var page struct {
		NewestSeq int64 `json:"newest_seq"`
	}
	_, err := r.api.Do(ctx, http.MethodGet, "/api/channels/"+r.cfg.channel+"/messages?latest=true&limit=1", nil, &page)
	return page.NewestSeq, err
}

// verifyStored reads the channel's messages after seq back and reports whether every
// acknowledged post is among them (found by its nonce).
func (r *benchRun) verifyStored(ctx context.Context, after int64, acked []string) {
	if len(acked) == 0 || len(acked) > benchVerifyMax {
		return
	}
	stored := map[string]bool{}
	for {
		var page struct {
			Messages []struct {
				Nonce      string `json:"nonce"`
				ChannelSeq int64  `json:"channel_seq"`
			} `json:"messages"`
			HasNewer bool `json:"has_newer"`
		}
		if _, err := r.api.Do(ctx, http.MethodGet, fmt.Sprintf("/api/channels/%s/messages?after_seq=%d&limit=200", r.cfg.channel, after), nil, &page); err != nil {
			fmt.Fprintf(r.out, "integrity: cannot read the posts back: %v\n", err)
			return
		}
		for _, m := range page.Messages {
			stored[m.Nonce] = true
			after = max(after, m.ChannelSeq)
		}
		if !page.HasNewer || len(page.Messages) == 0 {
			break
		}
	}
	missing := 0
	for _, n := range acked {
		if !stored[n] {
			missing++
		}
	}
	fmt.Fprintf(r.out, "integrity: %d acknowledged posts read back, %d missing\n", len(acked)-missing, missing)
}

// cpuSample reads the CPU time spent so far by the server and by Postgres (-1 when unknown).
func (r *benchRun) cpuSample() (server, postgres time.Duration) {
	server, postgres = -1, -1
	if r.cfg.pid > 0 {
		if t, err := procCPU(r.cfg.pid, false); err == nil {
			server = t
		}
	}
	if r.cfg.pgPID > 0 {
		if t, err := treeCPU(r.cfg.pgPID); err == nil {
			postgres = t
		}
	}
	return server, postgres
}

// clockTick is the kernel's USER_HZ, the unit of /proc/<pid>/stat times; 100 on every Linux
// architecture Go supports.
const clockTick = 100

// procCPU reads a process's user and system time from /proc/<pid>/stat, with its waited-for
// children's when children is set.
func procCPU(pid int, children bool) (time.Duration, error) {
	_, fields, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	// After the command name: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
	n := 2
	if children {
		n = 4
	}
	var ticks int64
	for _, f := range fields[11 : 11+n] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTick, nil
}

// procStat returns a process's parent and its stat fields after the command name.
func procStat(pid int) (ppid int, fields []string, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, nil, err
	}
	// The command name is in parentheses and may hold spaces; the fields follow the last ')'.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return 0, nil, errors.New("unreadable stat")
	}
	fields = strings.Fields(string(raw[i+1:]))
	if len(fields) < 15 {
		return 0, nil, errors.New("short stat")
	}
	ppid, err = strconv.Atoi(fields[1])
	return ppid, fields, err
}

// treeCPU is the CPU of a process (the postmaster), of the children it reaped, and of its
// living descendants (the backends and background workers).
func treeCPU(root int) (time.Duration, error) {
	total, err := procCPU(root, true)
	if err != nil {
		return 0, err
	}
	parents := map[int]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if ppid, _, err := procStat(pid); err == nil {
			parents[pid] = ppid
		}
	}
	for pid := range parents {
		for p := parents[pid]; p > 1; p = parents[p] {
			if p == root {
				if t, err := procCPU(pid, false); err == nil {
					total += t
				}
				break
			}
		}
	}
	return total, nil
}

// postmasterPID reads the postmaster's pid from a data directory's postmaster.pid.
func postmasterPID(dataDir string) (int, error) {
	raw, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	first, _, _ := strings.Cut(string(raw), "\n")
	return strconv.Atoi(strings.TrimSpace(first))
}
