package admin_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams/streamstest"
	"github.com/stretchr/testify/require"
)

// TestAdminNeedsAnExistingDataDir: only dev and serve make a data dir; an operator command
// pointed where no server keeps its database refuses, names the flags, and creates nothing
// (issue 23: `admin magic-link create` from the wrong directory ran initdb and printed a token
// the running server rejected).
func TestAdminNeedsAnExistingDataDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"WorkspaceList", []string{"admin", "workspace", "list"}},
		{"MagicLink", []string{"admin", "magic-link", "create", "--email", "ada@example.com"}},
		{"Migrate", []string{"migrate"}},
		{"EventsPrune", []string{"admin", "events", "prune", "--workspace", "any", "--keep-latest", "5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, existing := range []bool{false, true} {
				dir := filepath.Join(t.TempDir(), "dta")
				if existing {
					require.NoError(t, os.Mkdir(dir, 0o755)) // a directory, but no server's
				}
				out, err := run(t, append(tc.args, "--data-dir", dir)...)
				require.Error(t, err, out)
				require.Empty(t, out, "nothing printed, no token")
				require.Contains(t, err.Error(), "--data-dir "+dir)
				require.Contains(t, err.Error(), "--database-url")
				require.False(t, strings.Contains(err.Error(), "initdb"), err.Error())
				entries, _ := os.ReadDir(dir)
				require.Empty(t, entries, "nothing created in %s", dir)
				if !existing {
					require.NoDirExists(t, dir)
				}
			}
		})
	}
}

// TestServeWithoutDataDir: with Postgres, NATS and uploads elsewhere, serve creates no data dir,
// so it runs under a read-only root (systemd's ProtectSystem=strict).
func TestServeWithoutDataDir(t *testing.T) {
	t.Parallel()
	emb, _ := streamstest.Embedded(t)
	absent := filepath.Join(t.TempDir(), "data")
	startServer(t, "serve", "--database-url", persisttest.URL(t), "--nats-url", emb.TrustedURL(), "--data-dir", absent,
		"--upload-dir", filepath.Join(t.TempDir(), "uploads"), "--addr", "127.0.0.1:0", "--web-push=false")
	require.NoDirExists(t, absent)
}
