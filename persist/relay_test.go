package persist_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestRelayPositionSet: the relay's one-statement record is committed (a fresh read sees it),
// first as an insert, then as an update of the same row.
func TestRelayPositionSet(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	ctx := context.Background()
	read := func() persist.RelayState {
		st, err := persist.ReadV(ctx, store, func(tx *persist.Reader) (persist.RelayState, error) {
			return tx.RelayStateGet(ctx, w.ID)
		})
		require.NoError(t, err)
		return st
	}
	require.Equal(t, int64(0), read().Relayed)
	require.NoError(t, store.RelayPositionSet(ctx, w.ID, 5, 0))
	st := read()
	require.Equal(t, int64(5), st.Relayed)
	require.Equal(t, int64(0), st.StreamPrunedThrough)
	require.NoError(t, store.RelayPositionSet(ctx, w.ID, 9, 3))
	st = read()
	require.Equal(t, int64(9), st.Relayed)
	require.Equal(t, int64(3), st.StreamPrunedThrough)
	err := store.RelayPositionSet(ctx, "wsp_none", 1, 0)
	require.Error(t, err, "a position for a workspace that does not exist is refused by its foreign key")
}

// TestRelaySeedRetired: a seeded dormant workspace is relayed to its head and retired, so the
// relay's poll has nothing pending for it and its next event creates its stream; another
// workspace is left alone.
func TestRelaySeedRetired(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	other := persisttest.Workspace(t, store, owner.ID)
	persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, "general") // an event in its log
	ctx := context.Background()
	require.NoError(t, store.RelayPositionSet(ctx, w.ID, 1, 0)) // an older position is replaced
	require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error { return tx.RelaySeedRetired(ctx, []string{w.ID}) }))
	read := func(id string) persist.RelayState {
		st, err := persist.ReadV(ctx, store, func(tx *persist.Reader) (persist.RelayState, error) { return tx.RelayStateGet(ctx, id) })
		require.NoError(t, err)
		return st
	}
	st := read(w.ID)
	require.True(t, st.StreamRetired)
	require.NotZero(t, st.Head)
	require.Equal(t, st.Head, st.Relayed)
	require.False(t, read(other.ID).StreamRetired)
	pending, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.RelayState, error) { return tx.RelayPending(ctx, 100) })
	require.NoError(t, err)
	for _, p := range pending {
		require.NotEqual(t, w.ID, p.WorkspaceID, "nothing left to relay for the seeded workspace")
	}
}
