package admin_test

import (
	"archive/zip"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist/persisttest"
)

// writeArchive writes a zip of the given entries, in order.
func writeArchive(t *testing.T, entries [][2]string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "archive.zip")
	f, err := os.Create(path)
	require.NoError(t, err)
	zw := zip.NewWriter(f)
	for _, e := range entries {
		w, err := zw.Create(e[0])
		require.NoError(t, err)
		_, err = w.Write([]byte(e[1]))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	return path
}

const (
	hostileManifest  = `{"format": "natter-workspace-export", "version": 1, "workspace_id": "wsp_01m8dhed5mmyqtnk8328tjj2gv"}`
	hostileWorkspace = `{"id": "wsp_01m8dhed5mmyqtnk8328tjj2gv", "route_id": "TMYQTNK8328TJJ2GV", "name": "Hostile", "slug": "hostile", "created_by": "usr_01m8dhed5mmyqtnk8328tjj2aa", "created_at": "2026-01-02T03:04:05Z", "updated_at": "2026-01-02T03:04:05Z"}`
	hostileUsers     = `{"id": "usr_01m8dhed5mmyqtnk8328tjj2aa", "kind": "human", "display_name": "Olga Owner", "email": "olga@example.com", "created_at": "2026-01-01T00:00:00Z"}` + "\n"
	hostileMembers   = `{"user_id": "usr_01m8dhed5mmyqtnk8328tjj2aa", "role": "owner", "joined_at": "2026-01-02T03:04:05Z"}` + "\n"
	hostileChannel   = `{"id": "chn_01m8dhed5mmyqtnk8328tjj2cc", "route_id": "C1", "name": "general", "kind": "public", "visibility": "public", "created_at": "2026-01-02T03:04:05Z", "updated_at": "2026-01-02T03:04:05Z", "last_seq": 2}` + "\n"
)

// TestImportRefusesAndSkips: an archive of another format or a newer version is refused before
// anything is written; in a readable one, each line that cannot be written is skipped and
// reported while the rest is imported.
func TestImportRefusesAndSkips(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	uploads := t.TempDir()
	imp := func(path string, extra ...string) (string, error) {
		return run(t, append([]string{"admin", "import", "natter", "--database-url", url, "--upload-dir", uploads, "--json"},
			append(extra, path)...)...)
	}
	notZip := filepath.Join(t.TempDir(), "x.zip")
	require.NoError(t, os.WriteFile(notZip, []byte("not a zip"), 0o600))
	_, err := imp(notZip)
	require.ErrorContains(t, err, "open the archive")
	_, err = imp(writeArchive(t, [][2]string{{"manifest.json", `{"format": "slack", "version": 1}`}}))
	require.ErrorContains(t, err, `not a Natter export: format "slack"`)
	_, err = imp(writeArchive(t, [][2]string{{"manifest.json", `{"format": "natter-workspace-export", "version": 2}`}}))
	require.ErrorContains(t, err, "export format version 2; this natter reads up to version 1")
	out, err := run(t, "admin", "workspace", "list", "--json", "--database-url", url)
	require.NoError(t, err)
	require.JSONEq(t, `{"workspaces":[]}`, out, "refused archives wrote nothing")

	messages := `{"id": "msg_01m8dhed5mmyqtnk8328tjj2m1", "channel_id": "chn_01m8dhed5mmyqtnk8328tjj2cc", "author_id": "usr_01m8dhed5mmyqtnk8328tjj2aa", "channel_seq": 1, "kind": "message", "body": "kept", "created_at": "2026-01-02T03:05:00Z"}
{"id": "msg_01m8dhed5mmyqtnk8328tjj2m2", "channel_id": "chn_01m8dhed5mmyqtnk8328tjj2cc", "author_id": "usr_nobody", "channel_seq": 2, "kind": "message", "body": "no author", "created_at": "2026-01-02T03:06:00Z"}
{"id": "msg_01m8dhed5mmyqtnk8328tjj2m3", "channel_id": "chn_01m8dhed5mmyqtnk8328tjj2cc", "author_id": "usr_01m8dhed5mmyqtnk8328tjj2aa", "channel_seq": 3, "kind": "message", "body": "from the future", "created_at": "2999-01-01T00:00:00Z"}
{this is not json
`
	upload := `{"id": "upl_01m8dhed5mmyqtnk8328tjj2u1", "owner_id": "usr_01m8dhed5mmyqtnk8328tjj2aa", "filename": "a.txt", "content_type": "text/plain", "byte_size": 5, "sha256": "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", "created_at": "2026-01-02T03:04:05Z"}
{"id": "../../etc/passwd", "owner_id": "usr_01m8dhed5mmyqtnk8328tjj2aa", "filename": "p", "content_type": "text/plain", "byte_size": 1, "sha256": "00", "created_at": "2026-01-02T03:04:05Z"}
`
	path := writeArchive(t, [][2]string{{"workspace.json", hostileWorkspace}, {"members.jsonl", hostileMembers},
		{"users.jsonl", hostileUsers}, {"channels.jsonl", hostileChannel}, {"messages.jsonl", messages},
		{"uploads.jsonl", upload}, {"uploads/upl_01m8dhed5mmyqtnk8328tjj2u1", "HELLO"}, {"manifest.json", hostileManifest}})
	out, err = imp(path)
	require.NoError(t, err)
	var rep struct {
		WorkspaceID string                    `json:"workspace_id"`
		Counts      map[string]map[string]int `json:"counts"`
		SkipCount   int                       `json:"skip_count"`
		Skips       []struct {
			Entry  string
			Line   int
			Reason string
		} `json:"skips"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, 1, rep.Counts["message"]["created"], out)
	require.Equal(t, 5, rep.SkipCount, out)
	reasons := map[string]string{}
	for _, s := range rep.Skips {
		reasons[s.Entry+":"+string(rune('0'+s.Line))] = s.Reason
	}
	require.Contains(t, reasons["uploads.jsonl:1"], "do not match its size and SHA-256", "HELLO is not hello")
	require.Contains(t, reasons["uploads.jsonl:2"], "malformed")
	require.Contains(t, reasons["messages.jsonl:2"], "user usr_nobody is not in the archive")
	require.Contains(t, reasons["messages.jsonl:3"], "not in the future")
	require.Contains(t, reasons["messages.jsonl:4"], "invalid character")
	files, err := filepath.Glob(filepath.Join(uploads, "upload-*"))
	require.NoError(t, err)
	require.Empty(t, files, "a file whose bytes did not match is not kept")

	_, err = imp(path)
	require.ErrorContains(t, err, "a workspace with the slug hostile exists already")
	out, err = imp(path, "--slug", "hostile-2")
	require.NoError(t, err, "beside the first")
	require.Contains(t, out, `"workspace_id"`)
}
