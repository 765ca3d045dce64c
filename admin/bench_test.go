package admin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestBenchUsesItsOwnWorkspace: without --workspace the bench creates bench-… and says so; the
// workspace people use gets none of its messages.
func TestBenchUsesItsOwnWorkspace(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	base := startServer(t, "serve", "--database-url", url, "--data-dir", t.TempDir(), "--dev-bootstrap", "--addr", "127.0.0.1:0")
	out, err := run(t, "bench", "--url", base, "--sockets", "2", "--posters", "1", "--rate", "10", "--duration", "500ms",
		"--drain", "2s", "--source-addrs", "1")
	require.NoError(t, err, out)
	require.Regexp(t, `(?m)^bench: created workspace bench-\d{8}-\d{6} \(wsp_\w+\) for this run`, out)

	ctx := context.Background()
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	list, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.WorkspaceSummary, error) { return tx.WorkspaceListAll(ctx) })
	require.NoError(t, err)
	require.Len(t, list, 2, "the default workspace and the bench's")
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	count := func(workspaceID string) (n int) {
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM messages WHERE workspace_id = $1`, workspaceID).Scan(&n))
		return n
	}
	require.Zero(t, count(list[0].Workspace.ID), "nothing was posted into the default workspace")
	require.NotZero(t, count(list[1].Workspace.ID), "the bench posted into its own")
	require.True(t, strings.HasPrefix(list[1].Workspace.Slug, "bench-"))
}

func TestBenchHelpShowsPlaceholders(t *testing.T) {
	t.Parallel()
	out, err := run(t, "bench", "--help")
	require.NoError(t, err)
	require.Contains(t, out, "--token value")
	require.NotContains(t, out, "--token natter dev")
}
