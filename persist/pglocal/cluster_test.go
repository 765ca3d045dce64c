package pglocal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestFindBinariesMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := findBinaries(filepath.Join(t.TempDir(), "none"))
	require.ErrorIs(t, err, ErrNoBinaries)
	require.Contains(t, err.Error(), "install the PostgreSQL server package")
	require.Contains(t, err.Error(), "database URL")
}

// TestClusterLifecycle creates a cluster, writes to it, stops it, and finds the data after a
// restart; a second Open while it runs reuses it and leaves it running.
func TestClusterLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(reachableTempDir(t), "pg")
	cfg := Config{Dir: dir, Logger: slog.New(slog.DiscardHandler), FallbackRoot: filepath.Join(t.TempDir(), "unused")}
	c, err := Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	exec := func(c *Cluster, sql string) {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		require.NoError(t, err)
	}
	exec(c, `CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)`)

	reused, err := Open(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, reused.Stop(ctx), "stopping a reused cluster is a no-op")
	exec(c, `SELECT 1`)

	pid := c.PID()
	require.NotZero(t, pid)
	require.NoError(t, c.Stop(ctx))
	// Stopped means the postmaster is gone (or a zombie nobody reaps), not only its pid file.
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		_, state, _ := strings.Cut(string(stat), ") ")
		require.True(t, strings.HasPrefix(state, "Z"), "postgres still there after Stop: %s", stat)
	}
	c2, err := Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c2.Stop(context.Background()) })
	conn, err := pgx.Connect(ctx, c2.URL("postgres"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var v int
	require.NoError(t, conn.QueryRow(ctx, `SELECT v FROM kept`).Scan(&v))
	require.Equal(t, 42, v)
}

// TestUnreachableDataDir is the root case: a data dir under a directory the postgres user cannot
// enter (a clone under /root) moves the cluster to the fallback root, and deleting the data dir
// resets it.
func TestUnreachableDataDir(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only a root process hands the cluster to an unprivileged user")
	}
	ctx := context.Background()
	private := t.TempDir()
	require.NoError(t, os.Chmod(private, 0o700))
	// The fallback root must itself be reachable, as /var/lib/natter is.
	fallback := reachableTempDir(t)
	cfg := Config{Dir: filepath.Join(private, "data", "pg"), FallbackRoot: fallback, Logger: slog.New(slog.DiscardHandler)}
	c, err := Open(ctx, cfg)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(c.DataDir(), fallback), "cluster at %s", c.DataDir())
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `CREATE TABLE marker (v int)`)
	require.NoError(t, err)
	conn.Close(ctx)
	require.NoError(t, c.Stop(ctx))

	require.NoError(t, os.RemoveAll(filepath.Join(private, "data")))
	c2, err := Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c2.Stop(context.Background()) })
	conn, err = pgx.Connect(ctx, c2.URL("postgres"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `SELECT * FROM marker`)
	require.Error(t, err, "a deleted data dir starts a fresh cluster")
	require.False(t, errors.Is(err, context.Canceled))
}

// reachableTempDir is a temporary directory the cluster's unprivileged user can enter (a test's
// TempDir is private to root when tests run as root), removed when the test ends.
func reachableTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "natter-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
