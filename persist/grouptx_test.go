package persist_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestGroupTx: the group commit's transaction, whose BEGIN goes with its first batch and whose
// COMMIT goes with its last statement, commits and rolls back as a plain transaction does, and
// leaves its connection usable either way.
func TestGroupTx(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	has := func(key string) bool {
		t.Helper()
		n, err := persist.ReadV(ctx, store, func(tx *persist.Reader) (int, error) {
			return persist.CountSettings(ctx, tx, key)
		})
		require.NoError(t, err)
		return n == 1
	}
	insert := func(g *persist.GroupTx, keys ...string) {
		t.Helper()
		b := &pgx.Batch{}
		for _, k := range keys {
			b.Queue(`INSERT INTO instance_settings (key, value) VALUES ($1, 'v')`, k)
		}
		br := g.SendBatch(ctx, b)
		for range keys {
			_, err := br.Exec()
			require.NoError(t, err)
		}
		require.NoError(t, br.Close())
	}
	readKey := func(got *[]string) func(pgx.Rows) error {
		return func(rows pgx.Rows) error {
			var k string
			_, err := pgx.ForEachRow(rows, []any{&k}, func() error { *got = append(*got, k); return nil })
			return err
		}
	}

	t.Run("CommitsWithItsLastStatement", func(t *testing.T) {
		g, err := persist.BeginGroupTx(ctx, store)
		require.NoError(t, err)
		insert(g, "grouptx.a", "grouptx.b")
		var got []string
		require.NoError(t, g.CommitWith(ctx, readKey(&got), `SELECT key FROM instance_settings WHERE key = ANY($1) ORDER BY key`,
			[]string{"grouptx.a", "grouptx.b"}))
		require.Equal(t, []string{"grouptx.a", "grouptx.b"}, got, "the last statement sees the transaction's writes")
		require.ErrorIs(t, g.Rollback(ctx), pgx.ErrTxClosed, "a deferred rollback after the commit does nothing")
		require.True(t, has("grouptx.a"))
		require.True(t, has("grouptx.b"))
	})
	t.Run("AFailingLastStatementCommitsNothing", func(t *testing.T) {
		g, err := persist.BeginGroupTx(ctx, store)
		require.NoError(t, err)
		insert(g, "grouptx.c")
		var got []string
		require.Error(t, g.CommitWith(ctx, readKey(&got), `SELECT (1 / 0)::text`))
		require.NoError(t, g.Rollback(ctx))
		require.False(t, has("grouptx.c"))
	})
	t.Run("SavepointsAsNestedTransactions", func(t *testing.T) {
		g, err := persist.BeginGroupTx(ctx, store)
		require.NoError(t, err)
		insert(g, "grouptx.d")
		sp, err := g.Begin(ctx)
		require.NoError(t, err)
		_, err = sp.Exec(ctx, `INSERT INTO instance_settings (key, value) VALUES ('grouptx.e', 'v')`)
		require.NoError(t, err)
		require.NoError(t, sp.Rollback(ctx))
		require.NoError(t, g.Commit(ctx))
		require.True(t, has("grouptx.d"))
		require.False(t, has("grouptx.e"))
	})
	t.Run("NothingSentNothingToEnd", func(t *testing.T) {
		g, err := persist.BeginGroupTx(ctx, store)
		require.NoError(t, err)
		require.NoError(t, g.Commit(ctx))
		g, err = persist.BeginGroupTx(ctx, store)
		require.NoError(t, err)
		require.NoError(t, g.Rollback(ctx))
	})
	// Every connection went back to the pool in order: more transactions than the pool holds
	// connections still run.
	for range 40 {
		require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error { return nil }))
		g, err := persist.BeginGroupTx(ctx, store)
		require.NoError(t, err)
		insert(g, "grouptx.loop")
		require.NoError(t, g.Rollback(ctx))
	}
}
