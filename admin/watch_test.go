package admin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestWatch: natter watch prints the events a bot's post makes, one envelope a line, on a real
// socket to a real server; the owner's dev fallback needs no token.
func TestWatch(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	base := startServer(t, "serve", "--database-url", url, "--data-dir", t.TempDir(), "--dev-bootstrap", "--addr", "127.0.0.1:0")
	botToken, err := run(t, "admin", "bot", "create", "--database-url", url, "--workspace", "natter",
		"--created-by", "owner@localhost", "--name", "Deployer", "--plain")
	require.NoError(t, err)
	botToken = strings.TrimSpace(botToken)

	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	errs := &lockedLines{}
	done := make(chan error, 1)
	go func() {
		done <- admin.Run(ctx, []string{"natter", "watch", "--url", base, "--workspace", "natter"}, pw, errs)
		pw.Close()
	}()
	require.Eventually(t, func() bool { return strings.Contains(strings.Join(errs.lines(), "\n"), "watching ") },
		10*time.Second, 10*time.Millisecond)

	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path string, out any) {
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+botToken)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
	var workspaces struct{ Workspaces []struct{ ID string } }
	get("/api/workspaces", &workspaces)
	var channels struct{ Channels []struct{ ID, Name string } }
	get("/api/workspaces/"+workspaces.Workspaces[0].ID+"/channels", &channels)
	req, err := http.NewRequest(http.MethodPost, base+"/api/channels/"+channels.Channels[0].ID+"/messages",
		strings.NewReader(`{"body":"hello from the bot"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+botToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	sc := bufio.NewScanner(pr)
	require.True(t, sc.Scan(), "watch printed an event")
	var ev struct {
		Type    string
		Payload struct{ Message struct{ Body string } }
	}
	require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), sc.Text())
	require.Equal(t, "message.created", ev.Type)
	require.Equal(t, "hello from the bot", ev.Payload.Message.Body)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	cancel()
	require.NoError(t, <-done)
}
