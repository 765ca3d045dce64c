package main_test

import (
	"bufio"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist/persisttest"
)

// TestSignals: SIGHUP is logged and changes nothing (the server keeps answering); SIGTERM then
// drains and exits 0, logging why it stopped (issue 23, silent failure 5: SIGHUP killed the
// server without a log line or a drain).
func TestSignals(t *testing.T) {
	t.Parallel()
	bin := natterBinary(t)
	cmd := exec.Command(bin, "serve", "--database-url", persisttest.URL(t), "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--addr", "127.0.0.1:0", "--web-push=false")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	logs := watchLogs(t, cmd)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := listening(t, stdout)

	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	logs.waitFor(t, 0, "SIGHUP ignored")
	resp, err := http.Get(base + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "still serving after SIGHUP")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "a drained stop exits 0")
	logs.waitFor(t, 0, "stopping", "terminated signal received")
	logs.waitFor(t, 0, "natter stopped")
}

// listening reads the binary's stdout until its "natter listening on" line and returns the URL.
func listening(t *testing.T, stdout interface{ Read([]byte) (int, error) }) string {
	t.Helper()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "natter listening on "); ok {
				found <- addr
			}
		}
		close(found)
	}()
	select {
	case base, ok := <-found:
		require.True(t, ok, "natter exited before listening")
		return base
	case <-time.After(60 * time.Second):
		t.Fatal("natter did not start listening")
		return ""
	}
}
