package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist/persisttest"
)

// TestCrashSafety runs the real binary under steady post load, kills it with SIGKILL, starts it
// again on the same database and NATS store, and resumes a socket from its last cursor: every
// event whose POST was answered 2xx arrives exactly once, in cursor order. Streams idle for a
// second are retired (--stream-idle 1s), and the test waits for a retirement (the relay's
// counter) before each load: the first posts wake a retired stream, which the kill then
// interrupts, and after the restart the workspace's stream is retired again and woken by the
// later posts, so the resumed socket reads what is older than that stream from Postgres.
func TestCrashSafety(t *testing.T) {
	t.Parallel()
	bin := natterBinary(t)
	dir := t.TempDir()
	dbURL := persisttest.URL(t)
	args := []string{"serve", "--database-url", dbURL, "--data-dir", filepath.Join(dir, "data"), "--dev-bootstrap",
		"--addr", "127.0.0.1:0", "--stream-idle", "1s", "--metrics"}

	first := startNatter(t, bin, args)
	api := &crashClient{base: first.base}
	workspace, channel := api.target(t)
	waitRetired(t, first.base)
	sock := dialEvents(t, first.base, workspace, "")
	received := sock.collect()

	// Steady load: four posters until 150 posts were acknowledged, then SIGKILL mid-stream.
	var mu sync.Mutex
	var acked []int64
	enough := make(chan struct{})
	var once sync.Once
	var posters sync.WaitGroup
	for p := 0; p < 4; p++ {
		posters.Add(1)
		go func() {
			defer posters.Done()
			for i := 0; ; i++ {
				c, err := api.post(channel, fmt.Sprintf("crash %d-%d", p, i))
				if err != nil {
					return // the server is gone
				}
				mu.Lock()
				acked = append(acked, c)
				if len(acked) >= 150 {
					once.Do(func() { close(enough) })
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-enough:
	case <-time.After(60 * time.Second):
		t.Fatal("the posters did not reach 150 acknowledged posts")
	}
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
	_ = first.cmd.Wait()
	posters.Wait()
	sock.close()
	before := <-received

	second := startNatter(t, bin, args)
	api.base = second.base
	waitRetired(t, second.base)
	for i := 0; i < 20; i++ { // the log goes on after the restart
		c, err := api.post(channel, fmt.Sprintf("after %d", i))
		require.NoError(t, err)
		acked = append(acked, c)
	}
	resumeFrom := ""
	if len(before) > 0 {
		resumeFrom = strconv.FormatInt(before[len(before)-1], 10)
	}
	var last int64
	for _, c := range acked {
		last = max(last, c)
	}
	resumed := dialEvents(t, second.base, workspace, resumeFrom)
	after := resumed.readUntil(t, last)

	all := append(before, after...)
	for i := 1; i < len(all); i++ {
		require.Less(t, all[i-1], all[i], "cursor order, no duplicate: %v", all)
	}
	got := map[int64]bool{}
	for _, c := range all {
		got[c] = true
	}
	for _, c := range acked {
		require.True(t, got[c], "acknowledged cursor %d never arrived", c)
	}
	t.Logf("%d posts acknowledged (%d after the restart); %d events before the kill, %d after resuming from %q",
		len(acked), 20, len(before), len(after), resumeFrom)
	require.NoError(t, second.cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, second.cmd.Wait())
}

// waitRetired waits until the server's relay has retired a stream (its counter
// natter_relay_streams_retired_total, counted since the process started).
func waitRetired(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/metrics")
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "natter_relay_streams_retired_total "); ok {
				if n, _ := strconv.ParseFloat(v, 64); n >= 1 {
					return
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the relay retired no stream")
}

type natterProcess struct {
	cmd  *exec.Cmd
	base string
}

// startNatter runs the binary and waits for its "listening" line.
func startNatter(t *testing.T, bin string, args []string) *natterProcess {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var logs bytes.Buffer
	cmd.Stderr = &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("natter logs:\n%s", logs.String())
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "natter listening on "); ok {
				lines <- addr
			}
		}
		close(lines)
	}()
	select {
	case base, ok := <-lines:
		require.True(t, ok, "natter exited before listening")
		return &natterProcess{cmd: cmd, base: base}
	case <-time.After(60 * time.Second):
		t.Fatal("natter did not start listening")
		return nil
	}
}

type crashClient struct {
	base   string
	client http.Client
}

func (c *crashClient) call(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}

// target returns the bootstrapped workspace and its #general.
func (c *crashClient) target(t *testing.T) (string, string) {
	t.Helper()
	var ws struct{ Workspaces []struct{ ID string } }
	require.NoError(t, c.call(http.MethodGet, "/api/workspaces", nil, &ws))
	require.NotEmpty(t, ws.Workspaces)
	var chs struct{ Channels []struct{ ID, Name string } }
	require.NoError(t, c.call(http.MethodGet, "/api/workspaces/"+ws.Workspaces[0].ID+"/channels", nil, &chs))
	for _, ch := range chs.Channels {
		if ch.Name == "general" {
			return ws.Workspaces[0].ID, ch.ID
		}
	}
	t.Fatal("no #general")
	return "", ""
}

// post sends a message and returns its event's cursor once the server answered 2xx.
func (c *crashClient) post(channel, body string) (int64, error) {
	var resp struct{ Event struct{ Cursor string } }
	if err := c.call(http.MethodPost, "/api/channels/"+channel+"/messages", map[string]string{"body": body}, &resp); err != nil {
		return 0, err
	}
	return strconv.ParseInt(resp.Event.Cursor, 10, 64)
}

type eventSocket struct {
	conn net.Conn
	r    io.Reader
}

func dialEvents(t *testing.T, base, workspace, after string) *eventSocket {
	t.Helper()
	u := "ws" + strings.TrimPrefix(base, "http") + "/api/realtime/ws?workspace_id=" + workspace + "&after_cursor=" + after
	conn, br, _, err := ws.Dial(context.Background(), u)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	s := &eventSocket{conn: conn, r: conn}
	if br != nil {
		s.r = io.MultiReader(br, conn)
	}
	return s
}

// next returns the next event's cursor; ok is false when the connection ends.
func (s *eventSocket) next() (int64, bool) {
	for {
		h, err := ws.ReadHeader(s.r)
		if err != nil || h.Length > 1<<20 {
			return 0, false
		}
		p := make([]byte, h.Length)
		if _, err := io.ReadFull(s.r, p); err != nil {
			return 0, false
		}
		switch h.OpCode {
		case ws.OpClose:
			return 0, false
		case ws.OpPing:
			_ = ws.WriteFrame(s.conn, ws.MaskFrame(ws.NewPongFrame(p)))
		case ws.OpText:
			var e struct{ Cursor string }
			if json.Unmarshal(p, &e) == nil && e.Cursor != "" {
				c, _ := strconv.ParseInt(e.Cursor, 10, 64)
				return c, true
			}
		}
	}
}

// collect reads cursors until the connection ends and hands them over then.
func (s *eventSocket) collect() <-chan []int64 {
	out := make(chan []int64, 1)
	go func() {
		var cs []int64
		for {
			c, ok := s.next()
			if !ok {
				out <- cs
				return
			}
			cs = append(cs, c)
		}
	}()
	return out
}

func (s *eventSocket) close() { _ = s.conn.Close() }

// readUntil reads cursors up to last, under a deadline.
func (s *eventSocket) readUntil(t *testing.T, last int64) []int64 {
	t.Helper()
	_ = s.conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	var cs []int64
	for len(cs) == 0 || cs[len(cs)-1] < last {
		c, ok := s.next()
		require.True(t, ok, "the resumed socket ended after %v", cs)
		cs = append(cs, c)
	}
	return cs
}
