package admin_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
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

// TestBenchMembersOwnSessions: with --members every socket signs in as its own member of the
// bench's workspace with its own session (the server allows one socket per account here, so a
// shared account would be refused), the sockets spread over load generators, and every post
// reaches every socket once.
func TestBenchMembersOwnSessions(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	base := startServer(t, "serve", "--database-url", url, "--data-dir", t.TempDir(), "--dev-bootstrap", "--addr", "127.0.0.1:0",
		"--max-sockets-per-user", "1")
	out, err := run(t, "bench", "--url", base, "--database-url", url, "--members", "--sockets", "5", "--generators", "2",
		"--generators-in-process", "--posters", "1", "--rate", "10", "--duration", "500ms", "--drain", "5s", "--source-addrs", "2")
	require.NoError(t, err, out)
	require.Contains(t, out, "5 sockets (each socket its own member with its own session) from 2 source addresses in 2 load-generator processes")
	require.Regexp(t, `(?m)^natter connect: 5 of 5 sockets in `, out)
	require.Regexp(t, `(?m)^natter integrity: 0 lost \(.*\), 0 duplicated, 0 of 5 sockets closed by the server \(0 more ended`, out)
	m := regexp.MustCompile(`(?m)^natter posts: (\d+) acknowledged`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	require.Regexp(t, fmt.Sprintf(`over %d deliveries`, 5*atoi(t, m[1])), out, "every post at every socket, counted over both generators")

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var sessions, people, members int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT s.user_id), count(m.user_id)
		FROM sessions s JOIN workspaces w ON w.slug LIKE 'bench-%'
		LEFT JOIN workspace_members m ON m.workspace_id = w.id AND m.user_id = s.user_id
		WHERE s.method = 'bench'`).Scan(&sessions, &people, &members))
	require.Equal(t, []int{5, 5, 5}, []int{sessions, people, members}, "a session each, for five members of the bench's workspace")
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
