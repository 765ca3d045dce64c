package admin_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist/persisttest"
)

// TestOlderBinaryRefusesNewerSchema: after a downgrade, `migrate` and `serve` refuse, naming the
// migration the binary does not know, instead of saying "up to date" and serving (issue 23,
// silent failure 6).
func TestOlderBinaryRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	_, err = conn.Exec(context.Background(), `INSERT INTO schema_migrations (version, name, checksum) VALUES (9997, '9997_next_release.sql', 'x')`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(context.Background()))

	out, err := run(t, "migrate", "--database-url", url)
	require.Error(t, err, out)
	require.NotContains(t, out, "up to date")
	require.Regexp(t, `^migrate: .*newer than this binary.*9997_next_release\.sql.*its latest is \d{4}_`, err.Error())

	out, err = run(t, "serve", "--database-url", url, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--web-push=false")
	require.Error(t, err, out)
	require.NotContains(t, out, "natter listening")
	require.ErrorContains(t, err, "9997_next_release.sql")
}
