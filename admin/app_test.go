package admin_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/natterchat/natter/admin"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestMain(m *testing.M) {
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
		{"NATSURLScheme", []string{"dev", "--nats-url", "http://nats:4222"}, "--nats-url"},
		{"ListenWithExternalNATS", []string{"dev", "--nats-url", "nats://127.0.0.1:4222", "--nats-listen", "127.0.0.1:4222"}, "--nats-listen"},
		{"CookieNamespace", []string{"dev", "--cookie-namespace", "a b"}, "--cookie-namespace"},
		{"PlainHTTPAPIBaseURL", []string{"dev", "--api-base-url", "http://chat.example.com"}, "--api-base-url"},
		{"ProxyTeamDomainAlone", []string{"dev", "--proxy-team-domain", "https://team.cloudflareaccess.com"}, "--proxy-audience"},
		{"ProxyAudienceAlone", []string{"dev", "--proxy-audience", "tag"}, "--proxy-team-domain"},
		{"PlainHTTPProxyTeamDomain", []string{"dev", "--proxy-team-domain", "http://team.cloudflareaccess.com", "--proxy-audience", "tag"}, "--proxy-team-domain"},
		{"ProxyTeamDomainWithPath", []string{"dev", "--proxy-team-domain", "https://team.cloudflareaccess.com/x", "--proxy-audience", "tag"}, "--proxy-team-domain"},
		{"S3WithoutBucket", []string{"dev", "--upload-s3-endpoint", "https://s3.example.com"}, "--upload-s3-endpoint"},
		{"NoSocketsPerUser", []string{"dev", "--max-sockets-per-user", "0"}, "--max-sockets-per-user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := run(t, tc.args...)
			require.Error(t, err)
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, "invalid configuration: "+tc.flag), msg)
			require.NotContains(t, msg, "\n", "one line")
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
	id := strings.TrimSpace(out)
	require.True(t, strings.HasPrefix(id, "usr_"), out)
	again, err := run(t, "admin", "owner", "pin", "--database-url", url, "--email", "BOSS@example.com", "--name", "Boss")
	require.NoError(t, err)
	require.Equal(t, id, strings.TrimSpace(again), "pinning the same email is idempotent")

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

	out, err := run(t, "admin", "magic-link", "create", "--data-dir", dataDir, "--email", "guest@example.com")
	require.NoError(t, err, "admin commands work against a running dev instance")
	require.True(t, strings.HasPrefix(strings.TrimSpace(out), "mgt_"))
	require.Equal(t, owner, getMe(t, base), "the admin command left the running cluster alone")

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
			go func() { _, _ = io.Copy(io.Discard, pr) }()
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
