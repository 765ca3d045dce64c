package persist_test

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestEventAppendGapless appends from many transactions at once and checks that cursors are
// dense, unique and start at 1, and that the commit hook names the workspace.
func TestEventAppendGapless(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	woken := 0
	store := persisttest.NewStore(t, persisttest.WithCommitHook(func(ids []string) {
		mu.Lock()
		woken += len(ids)
		mu.Unlock()
	}))
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	ctx := context.Background()
	const n = 40
	var g errgroup.Group
	for i := 0; i < n; i++ {
		g.Go(func() error {
			return store.WithTx(ctx, func(tx *persist.Tx) error {
				_, err := tx.EventAppend(ctx, persist.EventInput{WorkspaceID: w.ID, Type: "test.event", ActorID: owner.ID, Payload: map[string]int{"i": i}})
				return err
			})
		})
	}
	require.NoError(t, g.Wait())
	events, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Event, error) {
		return tx.EventListAfter(ctx, w.ID, 0, 1000)
	})
	require.NoError(t, err)
	require.Len(t, events, n)
	for i, e := range events {
		require.Equal(t, int64(i+1), e.Cursor)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, n, woken)
}

// TestEventRolledBackLeavesNoGap shows a rolled-back append does not consume a cursor.
func TestEventRolledBackLeavesNoGap(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	ctx := context.Background()
	appendOne := func(fail bool) error {
		return store.WithTx(ctx, func(tx *persist.Tx) error {
			if _, err := tx.EventAppend(ctx, persist.EventInput{WorkspaceID: w.ID, Type: "test.event", Payload: nil}); err != nil {
				return err
			}
			if fail {
				return persist.Invalid("rolled back")
			}
			return nil
		})
	}
	require.NoError(t, appendOne(false))
	require.Error(t, appendOne(true))
	require.NoError(t, appendOne(false))
	events, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Event, error) {
		return tx.EventListAfter(ctx, w.ID, 0, 10)
	})
	require.NoError(t, err)
	require.Len(t, events, 2)
	require.Equal(t, int64(2), events[1].Cursor)
}

// TestReadV runs reads without a transaction; a write is not among what it offers (so a write
// inside ReadV does not compile), while the same reads work inside a transaction.
func TestReadV(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	u := persisttest.User(t, store, nil)
	ctx := context.Background()
	got, err := persist.ReadV(ctx, store, func(tx *persist.Reader) (persist.User, error) { return tx.UserGet(ctx, u.ID) })
	require.NoError(t, err)
	require.Equal(t, u.ID, got.ID)

	_, err = persist.ReadV(ctx, store, func(tx *persist.Reader) (persist.User, error) { return tx.UserGet(ctx, "usr_missing") })
	e, ok := persist.ErrorOf(err)
	require.True(t, ok)
	require.Equal(t, persist.CodeNotFound, e.Code)

	reader, writer := reflect.TypeOf(&persist.Reader{}), reflect.TypeOf(&persist.Tx{})
	_, canWrite := reader.MethodByName("MagicLinkCreate")
	require.False(t, canWrite, "a Reader has no write methods")
	_, canWrite = writer.MethodByName("MagicLinkCreate")
	require.True(t, canWrite)
	for i := range reader.NumMethod() {
		_, ok := writer.MethodByName(reader.Method(i).Name)
		require.True(t, ok, "a Tx reads what a Reader reads: %s", reader.Method(i).Name)
	}
	inTx, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) { return tx.UserGet(ctx, u.ID) })
	require.NoError(t, err)
	require.Equal(t, u.ID, inTx.ID)
}
