package persist_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestStoreChannelList: the channel list read outside a transaction (Store.ChannelList, the
// API's) answers what the transaction's answers, each channel with its own fields and reader
// state (the rows are scanned into one value and copied out); a guest's listing still creates
// the guest channel; a stranger and a missing workspace are refused as before.
func TestStoreChannelList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	ownerActor := persist.ActorFor(owner)
	w := persisttest.Workspace(t, store, owner.ID)
	reader := persisttest.User(t, store, nil)
	persisttest.Member(t, store, w.ID, reader.ID, persist.RoleMember)
	alpha := persisttest.Channel(t, store, ownerActor, w.ID, "alpha")
	beta := persisttest.Channel(t, store, ownerActor, w.ID, "beta")
	require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error {
		for _, body := range []string{"one", "two"} {
			if _, err := tx.MessageCreate(ctx, ownerActor, persist.Place{ChannelID: beta.ID}, persist.MessageCreateParams{Body: body}); err != nil {
				return err
			}
		}
		if _, err := tx.MessageCreate(ctx, ownerActor, persist.Place{ChannelID: alpha.ID}, persist.MessageCreateParams{Body: "before the archive"}); err != nil {
			return err
		}
		_, _, err := tx.ChannelUpdate(ctx, ownerActor, alpha.ID, persist.ChannelPatch{Archived: persisttest.Ptr(true),
			DisplayTitle: persisttest.Ptr("The first")})
		return err
	}))
	require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error {
		_, err := tx.ReadMark(ctx, persist.ActorFor(reader), persist.Place{ChannelID: alpha.ID}, 1)
		return err
	}))

	got, err := store.ChannelList(ctx, persist.ActorFor(reader), w.ID)
	require.NoError(t, err)
	inTx, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Channel, error) {
		return tx.ChannelList(ctx, persist.ActorFor(reader), w.ID)
	})
	require.NoError(t, err)
	require.Equal(t, inTx, got)
	byName := map[string]persist.Channel{}
	for _, c := range got {
		byName[c.Name] = c
	}
	a, b := byName["alpha"], byName["beta"]
	require.True(t, a.Archived)
	require.NotNil(t, a.ArchivedAt)
	require.Equal(t, "The first", a.DisplayTitle)
	require.False(t, b.Archived, "the archived channel listed before it is not carried over")
	require.Nil(t, b.ArchivedAt)
	require.Empty(t, b.DisplayTitle)
	require.Equal(t, int64(1), *a.LastReadSeq)
	require.Equal(t, int64(0), *a.UnreadCount)
	require.Equal(t, int64(0), *b.LastReadSeq)
	require.Equal(t, int64(2), *b.UnreadCount)
	*a.UnreadCount = 7
	require.Equal(t, int64(2), *b.UnreadCount, "each channel's state is its own")

	guest := persisttest.User(t, store, nil)
	persisttest.Member(t, store, w.ID, guest.ID, persist.RoleGuest)
	room, err := store.ChannelList(ctx, persist.ActorFor(guest), w.ID)
	require.NoError(t, err)
	require.Len(t, room, 1)
	require.Equal(t, persist.GuestChannel, room[0].Name)
	again, err := store.ChannelList(ctx, persist.ActorFor(guest), w.ID)
	require.NoError(t, err)
	require.Equal(t, room, again)

	_, err = store.ChannelList(ctx, persist.ActorFor(persisttest.User(t, store, nil)), w.ID)
	requireCode(t, err, persist.CodeForbidden)
	_, err = store.ChannelList(ctx, persist.ActorFor(reader), "wsp_missing")
	requireCode(t, err, persist.CodeNotFound)
}
