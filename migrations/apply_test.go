package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/migrations"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestApply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, persisttest.URL(t))
	require.NoError(t, err)
	defer pool.Close()

	applied, err := migrations.Apply(ctx, pool)
	require.NoError(t, err)
	require.Empty(t, applied, "the test database is already migrated")

	_, err = pool.Exec(ctx, `UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1`)
	require.NoError(t, err)
	_, err = migrations.Apply(ctx, pool)
	require.ErrorContains(t, err, "changed after it was applied")
}

// TestSearchIndexPendingListBounded: the message search index moves its pending entries into the
// index in small steps (0014), so no single post pays for moving 4 MB of them.
func TestSearchIndexPendingListBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, persisttest.URL(t))
	require.NoError(t, err)
	defer pool.Close()
	var options []string
	require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE relname = 'messages_search_idx'`).Scan(&options))
	require.Contains(t, options, "gin_pending_list_limit=256")
}

// TestApplyRefusesANewerSchema: a binary older than the database (a downgrade) refuses, naming
// the migration it does not know and its own latest, and applies nothing.
func TestApplyRefusesANewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, persisttest.URL(t))
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(ctx, `INSERT INTO schema_migrations (version, name, checksum) VALUES (9998, '9998_from_the_future.sql', 'x')`)
	require.NoError(t, err)
	applied, err := migrations.Apply(ctx, pool)
	require.ErrorIs(t, err, migrations.ErrSchemaNewer)
	require.ErrorContains(t, err, "9998_from_the_future.sql")
	require.Regexp(t, `its latest is \d{4}_[a-z_]+\.sql`, err.Error())
	require.Empty(t, applied)
}
