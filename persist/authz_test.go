package persist_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestGuestBudgetUnderConcurrency fires more parallel writes than a guest's daily budget: exactly
// GuestDailyPosts get through.
func TestGuestBudgetUnderConcurrency(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	guestCh := persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, persist.GuestChannel)
	general := persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, "general")
	guest := persisttest.User(t, store, nil)
	persisttest.Member(t, store, w.ID, guest.ID, persist.RoleGuest)
	ctx := context.Background()
	write := func(channelID string) error {
		return store.WithTx(ctx, func(tx *persist.Tx) error {
			_, _, err := tx.ChannelForWrite(ctx, persist.ActorFor(guest), channelID)
			return err
		})
	}

	_, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Channel, error) {
		c, _, err := tx.ChannelForRead(ctx, persist.ActorFor(guest), general.ID)
		return c, err
	})
	e, ok := persist.ErrorOf(err)
	require.True(t, ok)
	require.Equal(t, persist.CodeNotFound, e.Code, "guests do not see other channels")

	var g errgroup.Group
	results := make([]error, 8)
	for i := range results {
		g.Go(func() error { results[i] = write(guestCh.ID); return nil })
	}
	require.NoError(t, g.Wait())
	ok1 := 0
	for _, err := range results {
		if err == nil {
			ok1++
			continue
		}
		e, isApp := persist.ErrorOf(err)
		require.True(t, isApp, "%v", err)
		require.Equal(t, persist.CodeRateLimited, e.Code)
	}
	require.Equal(t, persist.GuestDailyPosts, ok1)
}
