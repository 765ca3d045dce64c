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

// TestSearchIndexPendingListBounded: the message search indexes (by word, 0014, and by day,
// 0036) move their pending entries into the index in small steps, so no single post pays for
// moving 4 MB of them.
func TestSearchIndexPendingListBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, persisttest.URL(t))
	require.NoError(t, err)
	defer pool.Close()
	for _, index := range []string{"messages_search_idx", "messages_search_days_idx"} {
		var options []string
		require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE relname = $1`, index).Scan(&options))
		require.Contains(t, options, "gin_pending_list_limit=256", index)
	}
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

// TestReadIndexes: the indexes of migration 0025 exist with the expressions persist's queries
// use (the test cluster has pg_trgm, as Debian's postgresql package does), and the ones they
// replaced are gone.
func TestReadIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, persisttest.URL(t))
	require.NoError(t, err)
	defer pool.Close()
	defs := map[string]string{}
	rows, err := pool.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN ('messages', 'users')`)
	require.NoError(t, err)
	for rows.Next() {
		var name, def string
		require.NoError(t, rows.Scan(&name, &def))
		defs[name] = def
	}
	require.NoError(t, rows.Err())
	for name, want := range map[string]string{
		"users_display_name_trgm_idx": "USING gin (lower(display_name) ",
		"users_handle_trgm_idx":       "USING gin (COALESCE(handle, ''::text) ",
		"messages_created_brin_idx":   "USING brin (created_at)",
		"messages_author_channel_idx": "USING btree (author_id, channel_id, channel_seq)",
		"messages_author_dm_idx":      "USING btree (author_id, dm_id, channel_seq)",
	} {
		require.Contains(t, defs[name], want, name)
	}
	for _, name := range []string{"users_display_name_trgm_idx", "users_handle_trgm_idx"} {
		require.Contains(t, defs[name], "gin_trgm_ops)", name)
	}
	for _, gone := range []string{"messages_channel_author_idx", "messages_dm_author_idx"} {
		require.NotContains(t, defs, gone)
	}
}
