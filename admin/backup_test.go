package admin_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/persist/pglocal"
)

// TestBackupRestorePrivateCluster: backup and restore work against the private PostgreSQL of a
// data dir as well as a database URL; restore makes natter's database in a private cluster,
// refuses a database that is not empty, and with --replace replaces it.
func TestBackupRestorePrivateCluster(t *testing.T) {
	t.Parallel()
	src := persisttest.URL(t)
	_, err := run(t, "admin", "workspace", "create", "--database-url", src, "--name", "Acme", "--owner-email", "ops@acme.example")
	require.NoError(t, err)
	dir := t.TempDir()
	first := filepath.Join(dir, "first.backup")
	unused := filepath.Join(dir, "unused")
	out, err := run(t, "admin", "backup", "--database-url", src, "--data-dir", unused, "--output", first)
	require.NoError(t, err)
	require.Contains(t, out, "1 workspaces")
	require.NoDirExists(t, unused, "no uploads: the data dir is not needed, nor made")

	// The cluster runs for the whole test, as under a running `natter dev`: each command finds
	// it running and leaves it so, rather than starting and stopping it (seconds each).
	data := filepath.Join(persisttest.ReachableTempDir(t), "data")
	cluster, err := pglocal.Open(context.Background(), pglocal.Config{Dir: filepath.Join(data, "pg"),
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Stop(context.Background()) })
	t0 := time.Now()
	out, err = run(t, "admin", "restore", "--data-dir", data, "--input", first)
	t.Logf("restore %v", time.Since(t0))
	require.NoError(t, err)
	require.Contains(t, out, "restored the backup")
	out, err = run(t, "admin", "workspace", "list", "--data-dir", data)
	require.NoError(t, err)
	require.Contains(t, out, "1 workspaces")
	require.Contains(t, out, `"Acme"`)

	second := filepath.Join(dir, "second.backup")
	_, err = run(t, "admin", "backup", "--data-dir", data, "--output", second)
	require.NoError(t, err, "pg_dump of the private cluster's own installation")
	_, err = run(t, "admin", "restore", "--data-dir", data, "--input", second)
	require.ErrorContains(t, err, "admin restore: the database is not empty")
	_, err = run(t, "admin", "workspace", "create", "--data-dir", data, "--name", "Later", "--owner-email", "ops@acme.example")
	require.NoError(t, err)
	_, err = run(t, "admin", "restore", "--data-dir", data, "--input", second, "--replace")
	require.NoError(t, err)
	out, err = run(t, "admin", "workspace", "list", "--data-dir", data)
	require.NoError(t, err)
	require.Contains(t, out, "1 workspaces", "the workspace made after the backup is gone")
}

// TestRestoreRefusals: a backup this binary cannot serve, or a dump that does not restore, is
// refused before the target changes; entries that are not upload objects are never written.
func TestRestoreRefusals(t *testing.T) {
	t.Parallel()
	src := persisttest.URL(t)
	_, err := run(t, "admin", "workspace", "create", "--database-url", src, "--name", "Acme", "--owner-email", "ops@acme.example")
	require.NoError(t, err)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.backup")
	_, err = run(t, "admin", "backup", "--database-url", src, "--output", good, "--data-dir", filepath.Join(dir, "none"))
	require.NoError(t, err)
	entries := readBackup(t, good)

	newer := rewriteBackup(t, dir, entries, func(m map[string]any, _ map[string][]byte) {
		m["migrations"] = append(m["migrations"].([]any), map[string]any{"version": 9999, "name": "9999_future.sql", "checksum": "00"})
	})
	changed := rewriteBackup(t, dir, entries, func(m map[string]any, _ map[string][]byte) {
		m["migrations"].([]any)[0].(map[string]any)["checksum"] = "00"
	})
	corrupt := rewriteBackup(t, dir, entries, func(_ map[string]any, e map[string][]byte) {
		e["database.pgdump"] = e["database.pgdump"][:len(e["database.pgdump"])/2]
	})
	for _, tc := range []struct {
		name, input, why string
		replace          bool
	}{
		{"NewerSchema", newer, "the backup's schema has migration 9999_future.sql, which this binary does not know (its latest is 00", false},
		{"ChangedMigration", changed, "differs from this binary's", false},
		{"CorruptDump", corrupt, "read the backup's dump", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := persisttest.URL(t) // a natter database with a workspace of its own
			_, err := run(t, "admin", "workspace", "create", "--database-url", target, "--name", "Kept", "--owner-email", "k@example.com")
			require.NoError(t, err)
			args := []string{"admin", "restore", "--database-url", target, "--input", tc.input, "--upload-dir", t.TempDir()}
			if tc.replace {
				args = append(args, "--replace")
			}
			_, err = run(t, args...)
			require.ErrorContains(t, err, tc.why)
			out, err := run(t, "admin", "workspace", "list", "--database-url", target)
			require.NoError(t, err)
			require.Contains(t, out, `"Kept"`, "the target is unchanged")
		})
	}

	t.Run("HostileEntries", func(t *testing.T) {
		hostile := rewriteBackup(t, dir, entries, func(_ map[string]any, e map[string][]byte) {
			e["uploads/../../escaped"] = []byte("x")
			e["uploads/upload-notakey"] = []byte("x")
		})
		uploads := filepath.Join(t.TempDir(), "deep", "uploads")
		_, err := run(t, "admin", "restore", "--database-url", persisttest.EmptyURL(t), "--input", hostile, "--upload-dir", uploads)
		require.NoError(t, err)
		require.NoFileExists(t, filepath.Join(uploads, "..", "..", "escaped"))
		require.NoFileExists(t, filepath.Join(uploads, "upload-notakey"))
	})

	t.Run("BackupLeavesNothingOnFailure", func(t *testing.T) {
		outDir := t.TempDir()
		_, err := run(t, "admin", "backup", "--database-url", persisttest.EmptyURL(t), "--output", filepath.Join(outDir, "x.backup"))
		require.ErrorContains(t, err, "the database holds no natter schema")
		left, _ := os.ReadDir(outDir)
		require.Empty(t, left)
	})

	t.Run("OtherSessions", func(t *testing.T) {
		target := persisttest.EmptyURL(t)
		conn, err := pgx.Connect(context.Background(), target)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		_, err = run(t, "admin", "restore", "--database-url", target, "--input", good, "--upload-dir", t.TempDir())
		require.ErrorContains(t, err, "1 other sessions are connected to the database")
	})
}

type backupEntry struct {
	name string
	body []byte
}

func readBackup(t *testing.T, path string) []backupEntry {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []backupEntry
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		out = append(out, backupEntry{h.Name, body})
	}
}

// rewriteBackup writes a copy of entries after edit has changed the manifest or the other
// entries (by name; new names are appended), and returns its path.
func rewriteBackup(t *testing.T, dir string, entries []backupEntry, edit func(manifest map[string]any, bodies map[string][]byte)) string {
	t.Helper()
	var manifest map[string]any
	require.Equal(t, "manifest.json", entries[0].name)
	require.NoError(t, json.Unmarshal(entries[0].body, &manifest))
	bodies := map[string][]byte{}
	for _, e := range entries[1:] {
		bodies[e.name] = e.body
	}
	edit(manifest, bodies)
	raw, err := json.Marshal(manifest)
	require.NoError(t, err)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	write := func(name string, body []byte) {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(body))}))
		_, err := tw.Write(body)
		require.NoError(t, err)
	}
	write("manifest.json", raw)
	for _, e := range entries[1:] {
		write(e.name, bodies[e.name])
		delete(bodies, e.name)
	}
	for name, body := range bodies {
		write(name, body)
	}
	require.NoError(t, tw.Close())
	f, err := os.CreateTemp(dir, "edited-*.backup")
	require.NoError(t, err)
	_, err = f.Write(buf.Bytes())
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return f.Name()
}
