package main_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist/persisttest"
)

// TestErrorLineJSON: under --log-format json (or NATTER_LOG_FORMAT=json) every line natter
// writes to stderr is a JSON object, the last one (why it stopped) included, for usage errors
// (exit 2) and failures after start-up (exit 1) alike; text logs keep the one-line form.
func TestErrorLineJSON(t *testing.T) {
	t.Parallel()
	bin := natterBinary(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	// A database that does not exist: serve logs its start-up, then stops at once.
	u, err := url.Parse(persisttest.URL(t))
	require.NoError(t, err)
	u.Path = "/natter_no_such_database"
	missingDB := u.String()

	for _, tc := range []struct {
		name   string
		args   []string
		env    []string
		status int
		why    string
	}{
		{"MisspeltFlag", []string{"serve", "--log-format", "json", "--addres", "127.0.0.1:0"}, nil, 2,
			"natter: serve: unknown flag --addres"},
		{"BadValueFromEnv", []string{"serve", "--addr", "127.0.0.1:99999"}, []string{"NATTER_LOG_FORMAT=json"}, 2,
			"natter: serve: invalid configuration: --addr"},
		{"BusyPort", []string{"serve", "--log-format=json", "--addr", busy.Addr().String(),
			"--database-url", missingDB, "--data-dir", t.TempDir()}, nil, 1, "natter: serve: listen on --addr"},
		{"NoSuchDatabase", []string{"serve", "--log-format", "json", "--addr", "127.0.0.1:0",
			"--database-url", missingDB, "--data-dir", t.TempDir()}, nil, 1, "natter: serve:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			cmd := exec.Command(bin, tc.args...)
			cmd.Dir = t.TempDir()
			cmd.Env = append(cmd.Environ(), tc.env...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "natter failed: %v\n%s", err, stderr.String())
			require.Equal(t, tc.status, exit.ExitCode(), stderr.String())
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			var last map[string]any
			for _, line := range lines {
				last = nil
				require.NoError(t, json.Unmarshal([]byte(line), &last), "not JSON: %q", line)
			}
			require.Equal(t, "ERROR", last["level"])
			require.Contains(t, last["msg"], tc.why)
			require.EqualValues(t, tc.status, last["exit_status"])
		})
	}

	t.Run("TextStaysOneLine", func(t *testing.T) {
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "serve", "--addres", "x")
		cmd.Dir = t.TempDir()
		cmd.Stderr = &stderr
		require.Error(t, cmd.Run())
		require.Equal(t, "natter: serve: unknown flag --addres\n", stderr.String())
	})
}
