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
