package admin_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/natterchat/natter/admin"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestMain(m *testing.M) {
	if runAsNatterProcess() { // a replica the cluster chaos test started, and may SIGKILL
		return
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

// run executes the command line in-process and returns stdout and the error.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := admin.Run(t.Context(), append([]string{"natter"}, args...), &out, &errOut)
	return out.String(), err
}

func TestInvalidConfiguration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		flag string
	}{
		{"BadAddr", []string{"dev", "--addr", "nonsense"}, "--addr"},
		{"ServeWithoutDatabase", []string{"serve"}, "--database-url"},
		{"PublicURLWithPath", []string{"dev", "--public-url", "https://chat.example.com/app"}, "--public-url"},
		{"PlainHTTPPublicURL", []string{"dev", "--public-url", "http://chat.example.com"}, "--public-url"},
		{"StreamReplicasEmbedded", []string{"dev", "--stream-replicas", "3"}, "--stream-replicas"},
		{"StreamIdleNegative", []string{"dev", "--stream-idle", "-1m"}, "--stream-idle"},
		{"StreamIdleUnderASecond", []string{"dev", "--stream-idle", "500ms"}, "--stream-idle"},
		{"CalloutWithoutNATSURL", []string{"dev", "--nats-callout-issuer-seed", "SAAKAIRNQ7CBDL2CPDY3T4YGNIWV7C56ILKKCALYXV3Y7BMMVYIBS26EWY"}, "--nats-callout-issuer-seed"},
		{"CalloutSeedNotAccount", []string{"dev", "--nats-url", "nats://127.0.0.1:4222", "--nats-callout-issuer-seed", "SUACEC4RN5YGAVDXQGU6RDFZGYAX4NCL23NNPABTYCYTALICLGRHVB4JPE"}, "--nats-callout-issuer-seed"},
		{"SystemURLWithoutCallout", []string{"dev", "--nats-url", "nats://127.0.0.1:4222", "--nats-system-url", "nats://127.0.0.1:4222"}, "--nats-system-url"},
		{"SystemURLScheme", []string{"dev", "--nats-url", "nats://127.0.0.1:4222", "--nats-callout-issuer-seed", "SAAKAIRNQ7CBDL2CPDY3T4YGNIWV7C56ILKKCALYXV3Y7BMMVYIBS26EWY", "--nats-system-url", "http://sys:pw@127.0.0.1:4222"}, "--nats-system-url"},
		{"BotTTL", []string{"dev", "--nats-url", "nats://127.0.0.1:4222", "--nats-callout-issuer-seed", "SAAKAIRNQ7CBDL2CPDY3T4YGNIWV7C56ILKKCALYXV3Y7BMMVYIBS26EWY", "--nats-bot-ttl", "100ms"}, "--nats-bot-ttl"},
		{"NATSURLScheme", []string{"dev", "--nats-url", "http://nats:4222"}, "--nats-url"},
		{"ListenWithExternalNATS", []string{"dev", "--nats-url", "nats://127.0.0.1:4222", "--nats-listen", "127.0.0.1:4222"}, "--nats-listen"},
		{"CookieNamespace", []string{"dev", "--cookie-namespace", "a b"}, "--cookie-namespace"},
		{"PlainHTTPAPIBaseURL", []string{"dev", "--api-base-url", "http://chat.example.com"}, "--api-base-url"},
		{"ProxyTeamDomainAlone", []string{"dev", "--proxy-team-domain", "https://team.cloudflareaccess.com"}, "--proxy-audience"},
		{"ProxyAudienceAlone", []string{"dev", "--proxy-audience", "tag"}, "--proxy-team-domain"},
		{"PlainHTTPProxyTeamDomain", []string{"dev", "--proxy-team-domain", "http://team.cloudflareaccess.com", "--proxy-audience", "tag"}, "--proxy-team-domain"},
		{"ProxyTeamDomainWithPath", []string{"dev", "--proxy-team-domain", "https://team.cloudflareaccess.com/x", "--proxy-audience", "tag"}, "--proxy-team-domain"},
		{"PushoverToken", []string{"dev", "--pushover-token", "short"}, "--pushover-token"},
		{"PushoverWithoutWebPush", []string{"dev", "--pushover-token", "azGDORePK8gMaC0QOYAMyEEuzJnyUi", "--web-push=false"}, "--pushover-token"},
		{"LogFormat", []string{"dev", "--log-format", "yaml"}, "--log-format"},
		{"LogLevel", []string{"dev", "--log-level", "loud"}, "--log-level"},
		{"S3WithoutBucket", []string{"dev", "--upload-s3-endpoint", "https://s3.example.com"}, "--upload-s3-endpoint"},
		{"NoSocketsPerUser", []string{"dev", "--max-sockets-per-user", "0"}, "--max-sockets-per-user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := run(t, tc.args...)
			require.Error(t, err)
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, tc.args[0]+": invalid configuration: "+tc.flag), msg)
			require.True(t, admin.IsUsageError(err), "exit 2")
			require.NotContains(t, msg, "\n", "one line")
			require.NotContains(t, msg, ":pw@", "a password in a URL is never repeated")
		})
	}
}

func TestEnvironmentVariables(t *testing.T) {
	t.Setenv("NATTER_ADDR", "still nonsense")
	_, err := run(t, "dev")
	require.ErrorContains(t, err, "invalid configuration: --addr")
}

func TestSocketsPerUserEnvironment(t *testing.T) {
	t.Setenv("NATTER_MAX_SOCKETS_PER_USER", "-1")
	_, err := run(t, "dev")
	require.ErrorContains(t, err, "invalid configuration: --max-sockets-per-user")
}

func TestAdminCommands(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)

	out, err := run(t, "admin", "magic-link", "create", "--database-url", url, "--email", "Ops@Example.com")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(strings.TrimSpace(out), "mgt_"), out)

	out, err = run(t, "admin", "owner", "pin", "--database-url", url, "--email", "boss@example.com", "--name", "Boss")
	require.NoError(t, err)
	id, ok := strings.CutPrefix(strings.TrimSpace(out), "owner pinned: ")
	require.True(t, ok, out)
	id, _, _ = strings.Cut(id, " ")
	require.True(t, strings.HasPrefix(id, "usr_"), out)
	again, err := run(t, "admin", "owner", "pin", "--database-url", url, "--email", "BOSS@example.com", "--name", "Boss")
	require.NoError(t, err)
	require.Equal(t, out, again, "pinning the same email is idempotent")

	_, err = run(t, "admin", "magic-link", "create", "--database-url", url, "--email", "not-an-email")
	require.Error(t, err)

	out, err = run(t, "migrate", "--database-url", url)
	require.NoError(t, err)
	require.Contains(t, out, "up to date")

	// The pinned owner becomes the owner of the bootstrapped workspace.
	base := startServer(t, "serve", "--database-url", url, "--data-dir", t.TempDir(), "--dev-bootstrap", "--addr", "127.0.0.1:0")
	require.Equal(t, id, getMe(t, base))
}

// TestDevKeepsDataAcrossRestarts runs `natter dev` on its own private cluster twice, with an admin
// command against the running instance's data dir in between.
func TestDevKeepsDataAcrossRestarts(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(persisttest.ReachableTempDir(t), "data")
	ctx, cancel := context.WithCancel(t.Context())
	base, proc := startServerCtx(t, ctx, "dev", "--data-dir", dataDir, "--addr", "127.0.0.1:0")
	owner := getMe(t, base)

	out, logs, err := runBoth(t, "admin", "magic-link", "create", "--data-dir", dataDir, "--email", "guest@example.com")
	require.NoError(t, err, "admin commands work against a running dev instance")
	require.True(t, strings.HasPrefix(out, "mgt_"))
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 1, "the secret alone on stdout")
	require.NotContains(t, logs, "level=INFO", "admin commands log only warnings")
	_, logs, err = runBoth(t, "admin", "magic-link", "create", "--data-dir", dataDir, "--email", "guest@example.com", "--verbose")
	require.NoError(t, err)
	require.Contains(t, logs, "level=INFO", "--verbose logs progress")
	require.Equal(t, owner, getMe(t, base), "the admin command left the running cluster alone")

	_, err = run(t, "dev", "--data-dir", dataDir, "--addr", "127.0.0.1:0")
	require.ErrorContains(t, err, "another natter server (pid ")
	require.ErrorContains(t, err, "is running on --data-dir "+dataDir)
	require.Equal(t, owner, getMe(t, base), "the refused second server left the first alone")

	cancel()
	require.NoError(t, proc.wait())

	base = startServer(t, "dev", "--data-dir", dataDir, "--addr", "127.0.0.1:0")
	require.Equal(t, owner, getMe(t, base), "data survives a restart")
}

func startServer(t *testing.T, args ...string) string {
	t.Helper()
	base, _ := startServerCtx(t, t.Context(), args...)
	return base
}

// process is a command running in-process; err is valid once done is closed.
type process struct {
	done chan struct{}
	err  error
}

// wait blocks until the command ends and returns its error.
func (p *process) wait() error {
	<-p.done
	return p.err
}

// startServerCtx runs a server command until ctx (or the test) ends and returns its base URL once
// it listens. The test always waits for the command to finish.
func startServerCtx(t *testing.T, ctx context.Context, args ...string) (string, *process) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	p := &process{done: make(chan struct{})}
	go func() {
		p.err = admin.Run(ctx, append([]string{"natter"}, args...), pw, io.Discard)
		pw.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, p.wait())
	})
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "natter listening on "); ok {
			go func(r io.Reader) { _, _ = io.Copy(io.Discard, r) }(pr)
			return rest, p
		}
	}
	t.Fatalf("server exited before listening: %v", p.wait())
	return "", nil
}

func getMe(t *testing.T, base string) string {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(base + "/api/me")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body struct {
		User struct {
			ID string `json:"id"`
		} `json:"user"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return body.User.ID
}

// TestBusyPortFoundFirst: the listen address is taken before the database is reached, so a busy
// port is the error even when the database is unreachable too.
func TestBusyPortFoundFirst(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, err = run(t, "serve", "--database-url", "postgres://natter@127.0.0.1:1/natter", "--data-dir", t.TempDir(),
		"--addr", ln.Addr().String())
	require.ErrorContains(t, err, "listen on --addr "+ln.Addr().String())
}

// TestServerLogs: --log-format json writes one JSON object per line at --log-level, and the
// start-up line names the sign-in methods the flags turned on.
func TestServerLogs(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	logs := &lockedLines{}
	p := &process{done: make(chan struct{})}
	go func() {
		p.err = admin.Run(ctx, []string{"natter", "serve", "--database-url", url, "--data-dir", t.TempDir(),
			"--addr", "127.0.0.1:0", "--log-format", "json", "--password-auth", "--web-push=false"}, pw, logs)
		pw.Close()
		close(p.done)
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "natter listening on ") {
	}
	go func(r io.Reader) { _, _ = io.Copy(io.Discard, r) }(pr)
	cancel()
	require.NoError(t, p.wait())

	var sawMethods bool
	for _, line := range logs.lines() {
		var entry struct {
			Level   string   `json:"level"`
			Msg     string   `json:"msg"`
			Enabled []string `json:"enabled"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &entry), "every line is JSON: %s", line)
		if entry.Msg == "sign-in methods" {
			sawMethods = true
			require.Equal(t, []string{"magic-link", "password"}, entry.Enabled)
		}
	}
	require.True(t, sawMethods)

	ctx, cancel = context.WithCancel(t.Context())
	quiet := &lockedLines{}
	done := make(chan error, 1)
	pr, pw = io.Pipe()
	go func() {
		done <- admin.Run(ctx, []string{"natter", "serve", "--database-url", url, "--data-dir", t.TempDir(),
			"--addr", "127.0.0.1:0", "--log-level", "warn", "--web-push=false"}, pw, quiet)
		pw.Close()
	}()
	sc = bufio.NewScanner(pr)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "natter listening on ") {
	}
	go func(r io.Reader) { _, _ = io.Copy(io.Discard, r) }(pr)
	cancel()
	require.NoError(t, <-done)
	require.Empty(t, quiet.lines(), "nothing at info with --log-level warn")
}

// lockedLines collects what a command writes to stderr.
type lockedLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLines) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.buf.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
