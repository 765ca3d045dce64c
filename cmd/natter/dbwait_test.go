package main_test

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestDatabaseDownAtStart: `natter serve` started before its database waits for it, logging each
// try with back-off and answering /readyz 503 (and /healthz 200) meanwhile; it serves once the
// database answers, and logs the database's return after a later outage as well as the refusals
// (issue 23, silent failure 4: serve exited in 0.1 s).
func TestDatabaseDownAtStart(t *testing.T) {
	t.Parallel()
	bin := natterBinary(t)
	route, outage := persisttest.WithOutage(t)
	cfg := persist.Config{URL: persisttest.URL(t)}
	route(&cfg)
	outage.Cut()
	cmd := exec.Command(bin, "serve", "--database-url", cfg.URL, "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--addr", "127.0.0.1:0", "--web-push=false", "--dev-bootstrap")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	logs := watchLogs(t, cmd)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	first := logs.waitFor(t, 0, "database not reachable; trying again", "attempt=1", "retry_in_ms=1000")
	second := logs.waitFor(t, first+1, "database not reachable; trying again", "attempt=2", "retry_in_ms=2000")
	addr := regexp.MustCompile(`addr=(\S+)`).FindStringSubmatch(logs.all()[second])
	require.Len(t, addr, 2, "the waiting line names the address answering meanwhile")
	base := "http://" + addr[1]
	status, body := get(t, base+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.JSONEq(t, `{"status":"starting","failing":["database"]}`, body)
	status, _ = get(t, base+"/healthz")
	require.Equal(t, http.StatusOK, status, "alive while waiting")
	status, body = get(t, base+"/api/workspaces")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Contains(t, body, `"code":"unavailable"`)

	outage.Restore()
	require.Equal(t, base, listening(t, stdout), "the same listener serves the API")
	logs.waitFor(t, second, "database connected", "attempts=")
	status, _ = get(t, base+"/readyz")
	require.Equal(t, http.StatusOK, status)

	outage.Cut()
	status, _ = get(t, base+"/api/workspaces")
	require.Equal(t, http.StatusServiceUnavailable, status)
	lost := logs.waitFor(t, second, "the database is unavailable")
	logs.waitFor(t, second, "relay poll failed") // the poll (every 500 ms) saw the outage too
	outage.Restore()
	logs.waitFor(t, lost, "the database is reachable again", "down_ms=")
	status, _ = get(t, base+"/api/workspaces")
	require.Equal(t, http.StatusOK, status)
}
