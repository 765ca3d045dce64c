package admin_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestMetricsAddr: --metrics-addr serves the Prometheus text on a listener of its own, with the
// database pool, the relay's backlog, the NATS connection and the build; the API's listener
// keeps /metrics off without --metrics.
func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	api, metrics := startWithMetrics(t)
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(metrics)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	text := string(body)
	for _, want := range []string{
		"\nnatter_db_pool_max_conns 32\n",
		"\nnatter_nats_connected 1\n",
		"\nnatter_nats_reconnects_total 0\n",
		"\nnatter_relay_backlog_events ",
		"\nnatter_relay_stalled_workspaces 0\n",
		"\nnatter_build_info{commit=",
		"\nnatter_db_pool_acquires_total ",
	} {
		require.Contains(t, text, want)
	}

	resp, err = client.Get(api + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "not on the public listener without --metrics")
	resp, err = client.Get(strings.TrimSuffix(metrics, "/metrics") + "/api/me")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "the metrics listener serves nothing else")
}

// startWithMetrics runs `natter serve` with --metrics-addr until the test ends and returns the
// API's base URL and the metrics URL it printed.
func startWithMetrics(t *testing.T) (api, metrics string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- admin.Run(ctx, []string{"natter", "serve", "--database-url", persisttest.URL(t), "--data-dir", t.TempDir(),
			"--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--dev-bootstrap"}, pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	sc := bufio.NewScanner(pr)
	for (api == "" || metrics == "") && sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "natter listening on "); ok {
			api = rest
		}
		if rest, ok := strings.CutPrefix(sc.Text(), "natter metrics on "); ok {
			metrics = rest
		}
	}
	require.NotEmpty(t, metrics, "the metrics address is printed")
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return api, metrics
}
