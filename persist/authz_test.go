package persist_test

import (
	"context"
	"sync"
	"testing"
	"time"

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
	require.Equal(t, 3, ok1, "SPEC §Limits: guest posting 3 a day")
}

// TestWriteGuards checks ChannelForWrite's refusals and the guest budget's day boundary and
// roll-back.
func TestWriteGuards(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 23, 59, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	store := persisttest.NewStore(t, persisttest.WithClock(clock))
	ctx := context.Background()
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	ownerActor := persist.ActorFor(owner)
	general := persisttest.Channel(t, store, ownerActor, w.ID, "general")
	write := func(u persist.User, channelID string) error {
		return store.WithTx(ctx, func(tx *persist.Tx) error {
			_, _, err := tx.ChannelForWrite(ctx, persist.ActorFor(u), channelID)
			return err
		})
	}
	moderate := func(userID string, p persist.ModerationPatch) {
		t.Helper()
		require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error {
			_, _, err := tx.MemberModerate(ctx, ownerActor, w.ID, userID, p)
			return err
		}))
	}

	t.Run("TimedOutBlockedAndArchived", func(t *testing.T) {
		t.Parallel()
		member := persisttest.User(t, store, nil)
		persisttest.Member(t, store, w.ID, member.ID, persist.RoleMember)
		require.NoError(t, write(member, general.ID))
		moderate(member.ID, persist.ModerationPatch{TimeoutMinutes: persisttest.Ptr(60)})
		requireCode(t, write(member, general.ID), persist.CodeForbidden)
		moderate(member.ID, persist.ModerationPatch{ClearTimeout: true, Blocked: persisttest.Ptr(true)})
		requireCode(t, write(member, general.ID), persist.CodeForbidden)
		moderate(member.ID, persist.ModerationPatch{Blocked: persisttest.Ptr(false)})
		require.NoError(t, write(member, general.ID))
		require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error {
			_, _, err := tx.ChannelUpdate(ctx, ownerActor, general.ID, persist.ChannelPatch{Archived: persisttest.Ptr(true)})
			return err
		}))
		requireCode(t, write(member, general.ID), persist.CodeForbidden)
		require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error {
			_, _, err := tx.ChannelUpdate(ctx, ownerActor, general.ID, persist.ChannelPatch{Archived: persisttest.Ptr(false)})
			return err
		}))
	})

	t.Run("GuestBudgetRollsBackAndRenewsAtMidnightUTC", func(t *testing.T) {
		t.Parallel()
		guest := persisttest.User(t, store, nil)
		persisttest.Member(t, store, w.ID, guest.ID, persist.RoleGuest)
		room, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Channel, error) {
			return tx.ChannelList(ctx, persist.ActorFor(guest), w.ID)
		})
		require.NoError(t, err)
		require.Len(t, room, 1)
		// A post whose transaction fails gives its budget back.
		failed := store.WithTx(ctx, func(tx *persist.Tx) error {
			if _, _, err := tx.ChannelForWrite(ctx, persist.ActorFor(guest), room[0].ID); err != nil {
				return err
			}
			return persist.Invalid("the message was refused")
		})
		requireCode(t, failed, persist.CodeInvalidRequest)
		for range 3 {
			require.NoError(t, write(guest, room[0].ID))
		}
		requireCode(t, write(guest, room[0].ID), persist.CodeRateLimited)
		requireCode(t, write(guest, general.ID), persist.CodeNotFound)
		mu.Lock()
		now = now.Add(time.Minute) // 00:00 UTC the next day
		mu.Unlock()
		require.NoError(t, write(guest, room[0].ID))
	})
}
