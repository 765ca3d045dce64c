package admin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestStartupLine: one log line says which build runs, where Postgres and NATS are and what it
// listens on, without the database URL's credentials.
func TestStartupLine(t *testing.T) {
	t.Parallel()
	url := strings.Replace(persisttest.URL(t), "natter@", "natter:s3cret@", 1)
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	logs := &lockedLines{}
	done := make(chan error, 1)
	go func() {
		done <- admin.Run(ctx, []string{"natter", "serve", "--database-url", url, "--data-dir", t.TempDir(),
			"--addr", "127.0.0.1:0", "--log-format", "json", "--web-push=false"}, pw, logs)
		pw.Close()
	}()
	var base string
	sc := bufio.NewScanner(pr)
	for base == "" && sc.Scan() {
		base, _ = strings.CutPrefix(sc.Text(), "natter listening on ")
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	cancel()
	require.NoError(t, <-done)

	var started []map[string]any
	for _, line := range logs.lines() {
		var entry map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &entry), "JSON only: %s", line)
		if entry["msg"] == "natter started" {
			started = append(started, entry)
		}
		require.NotContains(t, line, "s3cret")
	}
	require.Len(t, started, 1)
	line := started[0]
	require.Contains(t, line["version"], ", commit ")
	require.Equal(t, "embedded", line["nats"])
	require.Equal(t, "http://"+line["addr"].(string), base)
	require.Regexp(t, `^/.+:5432/natter_test_[0-9a-f]+$`, line["postgres"], "host, port and database of the unix-socket URL")
}
