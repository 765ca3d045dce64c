package persist_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestAttemptBudget: concurrent attempts on one key, from any number of connections, are
// counted exactly: a budget of 10 admits 10 of 40 at once.
func TestAttemptBudget(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (time.Duration, error) {
				return tx.AttemptTake(ctx, "login", "203.0.113.9", 10, time.Hour)
			})
			require.NoError(t, err)
			if wait == 0 {
				admitted.Add(1)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int64(10), admitted.Load())

	wait, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (time.Duration, error) {
		return tx.AttemptTake(ctx, "setup", "203.0.113.9", 10, time.Hour)
	})
	require.NoError(t, err)
	require.Zero(t, wait, "each budget counts on its own")

	n, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (int64, error) {
		return tx.AttemptBudgetsPrune(ctx, "login")
	})
	require.NoError(t, err)
	require.Zero(t, n, "a bucket not full again is kept")
}
