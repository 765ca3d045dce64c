package admin_test

import (
	"archive/zip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// writeSlackExport writes a small Slack export zip of entries (name → JSON text) to a file.
func writeSlackExport(t *testing.T, entries map[string]string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "export.zip")
	f, err := os.Create(path)
	require.NoError(t, err)
	zw := zip.NewWriter(f)
	for name, body := range entries {
		w, err := zw.Create(name)
		require.NoError(t, err)
		_, err = w.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	return path
}

// TestAdminImportSlack: the command imports an export into the workspace named by its slug,
// applies --map-emails, prints counts and skips (one JSON object with --json), and refuses a
// malformed address map or a missing export before writing anything.
func TestAdminImportSlack(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	ctx := context.Background()
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	owner := persisttest.User(t, store, &persisttest.UserOpts{Email: persisttest.Ptr("slack-owner@example.com")})
	w := persisttest.Workspace(t, store, owner.ID)
	export := writeSlackExport(t, map[string]string{
		"users.json":    `[{"id":"U1","name":"owner","profile":{"email":"old-owner@example.com"}},{"id":"U2","name":"sam","real_name":"Sam"}]`,
		"channels.json": `[{"id":"C1","name":"general","members":["U1","U2"]}]`,
		"general/2020-01-01.json": `[{"type":"message","ts":"1577869200.000100","user":"U2","text":"hi <@U1>"},
			{"type":"message","ts":"bad","user":"U1","text":"never"}]`,
	})
	emails := filepath.Join(t.TempDir(), "emails.txt")
	require.NoError(t, os.WriteFile(emails, []byte("# old new\nOld-Owner@example.com slack-owner@example.com\n"), 0o600))
	db := []string{"--database-url", url, "--upload-dir", t.TempDir()}

	out, err := run(t, append(append([]string{"admin", "import", "slack", "--workspace", w.Slug, "--map-emails", emails, "--json"}, db...), export)...)
	require.NoError(t, err)
	var rep struct {
		Counts map[string]int
		Skips  []struct{ What, Reason string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, map[string]int{"people_matched": 1, "people_created": 1, "channels": 1, "messages": 1, "skipped": 1}, rep.Counts)
	require.Len(t, rep.Skips, 1)
	require.Contains(t, rep.Skips[0].Reason, "bad timestamp")

	out, err = run(t, append(append([]string{"admin", "import", "slack", "--workspace", w.ID}, db...), export)...)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(out, "imported from Slack: 4 already imported, 1 skipped\nskipped #general message bad: bad timestamp"), out)

	require.NoError(t, os.WriteFile(emails, []byte("just-one@example.com\n"), 0o600))
	_, err = run(t, append(append([]string{"admin", "import", "slack", "--workspace", w.Slug, "--map-emails", emails}, db...), export)...)
	require.ErrorContains(t, err, "line 1")
	_, err = run(t, append([]string{"admin", "import", "slack", "--workspace", w.Slug}, db...)...)
	require.ErrorContains(t, err, "name the export")
	_, err = run(t, append(append([]string{"admin", "import", "slack", "--workspace", w.Slug}, db...), filepath.Join(t.TempDir(), "none.zip"))...)
	require.ErrorContains(t, err, "open the export")
}
