package main_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams/streamstest"
)

// TestStoreFull runs the real binary with its data dir (the JetStream store) on a small disk and
// fills it: posts still succeed, /readyz answers 503 naming the relay and the metrics say
// so; once space is back the server resumes by itself, with /readyz 200 again, the live socket
// and a socket catching up from before the outage both receiving every acknowledged event
// (issue 23, silent failure 1).
func TestStoreFull(t *testing.T) {
	t.Parallel()
	bin := natterBinary(t)
	dir := streamstest.SmallDisk(t, 8<<20)
	cmd := exec.Command(bin, "serve", "--database-url", persisttest.URL(t), "--data-dir", dir, "--dev-bootstrap",
		"--addr", "127.0.0.1:0", "--metrics", "--web-push=false")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	logs := watchLogs(t, cmd)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := listening(t, stdout)
	api := &crashClient{base: base}
	workspace, channel := api.target(t)
	before, err := api.post(channel, "before the disk filled")
	require.NoError(t, err)
	live := dialEvents(t, base, workspace, strconv.FormatInt(before, 10))
	// The relay creates the stream after the post is answered: fill the disk only once the
	// stream holds the post, or the outage hits the stream's creation, which needs no recovery.
	require.Eventually(t, func() bool {
		_, metrics := get(t, base+"/metrics")
		return publishedAtLeast(metrics, before)
	}, 30*time.Second, 20*time.Millisecond, "the relay stores the post before the disk fills")

	filler := streamstest.FillDisk(t, dir)
	var last int64
	for i := 0; i < 20; i++ {
		c, err := api.post(channel, fmt.Sprintf("while full %d", i))
		require.NoError(t, err, "posting works with the stream store full")
		last = c
	}
	mark := logs.waitFor(t, 0, "events cannot reach the workspace streams")
	status, body := get(t, base+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, status, body)
	require.JSONEq(t, `{"status":"unavailable","failing":["relay"]}`, body)
	_, metrics := get(t, base+"/metrics")
	require.Contains(t, metrics, "\nnatter_relay_stalled_workspaces 1\n")

	require.NoError(t, os.Remove(filler))
	logs.waitFor(t, mark, "events reach the workspace streams again")
	status, body = get(t, base+"/readyz")
	require.Equal(t, http.StatusOK, status, body)
	require.Len(t, live.readUntil(t, last), 20, "the live socket gets every post")
	resumed := dialEvents(t, base, workspace, strconv.FormatInt(before, 10)).readUntil(t, last)
	require.Len(t, resumed, 20, "catch-up from before the outage reaches the log's end: %v", resumed)
	require.Equal(t, last, resumed[len(resumed)-1])
	_, metrics = get(t, base+"/metrics")
	require.Contains(t, metrics, "\nnatter_relay_stalled_workspaces 0\n")
	require.Contains(t, metrics, "\nnatter_relay_store_recoveries_total 1\n")
}

// publishedAtLeast reports whether the metrics count at least n events stored in the streams.
func publishedAtLeast(metrics string, n int64) bool {
	for _, line := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(line, "natter_relay_published_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return err == nil && f >= float64(n)
		}
	}
	return false
}

// get fetches a URL and returns its status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, strings.TrimSpace(string(body))
}
