package admin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestAdminEventsPrune(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	ctx := context.Background()
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	for i := 0; i < 5; i++ {
		require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error {
			_, err := tx.EventAppend(ctx, persist.EventInput{WorkspaceID: w.ID, Type: "test.event"})
			return err
		}))
	}
	head := func() persist.EventWindow {
		win, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.EventWindow, error) { return tx.EventWindowGet(ctx, w.ID) })
		require.NoError(t, err)
		return win
	}
	start := head()

	_, err = run(t, "admin", "events", "prune", "--database-url", url, "--workspace", w.ID)
	require.ErrorContains(t, err, "older-than-days")

	out, err := run(t, "admin", "events", "prune", "--database-url", url, "--workspace", w.Slug, "--older-than-days", "30")
	require.NoError(t, err)
	require.Contains(t, out, "pruned 0 events", "nothing is a month old")

	out, err = run(t, "admin", "events", "prune", "--database-url", url, "--workspace", w.ID, "--keep-latest", "2")
	require.NoError(t, err)
	require.Contains(t, out, "the oldest retained cursor is")
	require.Equal(t, start.Head-2, head().PrunedThrough)

	out, err = run(t, "admin", "events", "prune", "--database-url", url, "--workspace", w.ID, "--older-than-days", "0")
	require.NoError(t, err)
	require.Equal(t, start.Head, head().PrunedThrough, "every event is older than now: %s", out)
}
