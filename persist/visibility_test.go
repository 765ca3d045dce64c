package persist_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestVisibilityRule(t *testing.T) {
	t.Parallel()
	facts := persist.VisibilityFacts{GuestChannelID: "chn_guest", DMMembers: map[string][]string{"dm_ab": {"a", "b"}}}
	member := persist.Viewer{UserID: "a"}
	outsider := persist.Viewer{UserID: "c"}
	guest := persist.Viewer{UserID: "b", Guest: true}
	guestOutside := persist.Viewer{UserID: "g", Guest: true}
	for _, tc := range []struct {
		name   string
		viewer persist.Viewer
		scope  persist.EventScope
		want   bool
	}{
		{"MemberSeesChannel", member, persist.EventScope{ChannelID: "chn_x"}, true},
		{"MemberSeesWorkspaceWide", member, persist.EventScope{}, true},
		{"MemberSeesOwnDM", member, persist.EventScope{DirectConversationID: "dm_ab"}, true},
		{"MemberMissesOtherDM", outsider, persist.EventScope{DirectConversationID: "dm_ab"}, false},
		{"UnknownDMReachesNobody", member, persist.EventScope{DirectConversationID: "dm_zz"}, false},
		{"GuestSeesGuestChannel", guest, persist.EventScope{ChannelID: "chn_guest"}, true},
		{"GuestMissesOtherChannel", guest, persist.EventScope{ChannelID: "chn_x"}, false},
		{"GuestMissesWorkspaceWide", guest, persist.EventScope{}, false},
		{"GuestSeesOwnDM", guest, persist.EventScope{DirectConversationID: "dm_ab"}, true},
		{"GuestMissesOtherDM", guestOutside, persist.EventScope{DirectConversationID: "dm_ab"}, false},
		{"GuestWithoutGuestChannel", guest, persist.EventScope{ChannelID: ""}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, facts.Visible(tc.viewer, tc.scope))
		})
	}
}

// backfillBundle is a workspace with an owner, a guest, an outsider member, the guest channel,
// another channel and a DM between owner and guest.
type backfillBundle struct {
	store                              *persist.Store
	ws                                 persist.Workspace
	owner, guest, other                persist.User
	guestChannel, general, dm          string
	ownerActor, guestActor, otherActor persist.Actor
}

func setupBackfill(t *testing.T) *backfillBundle {
	t.Helper()
	store := persisttest.NewStore(t)
	b := &backfillBundle{store: store}
	b.owner = persisttest.User(t, store, nil)
	b.guest = persisttest.User(t, store, nil)
	b.other = persisttest.User(t, store, nil)
	b.ws = persisttest.Workspace(t, store, b.owner.ID)
	persisttest.Member(t, store, b.ws.ID, b.guest.ID, persist.RoleGuest)
	persisttest.Member(t, store, b.ws.ID, b.other.ID, persist.RoleMember)
	b.ownerActor, b.guestActor, b.otherActor = persist.ActorFor(b.owner), persist.ActorFor(b.guest), persist.ActorFor(b.other)
	b.guestChannel = persisttest.Channel(t, store, b.ownerActor, b.ws.ID, persist.GuestChannel).ID // cursor 1
	b.general = persisttest.Channel(t, store, b.ownerActor, b.ws.ID, "general").ID                 // cursor 2
	b.dm = persisttest.DM(t, store, b.ws.ID, b.owner.ID, b.guest.ID)
	return b
}

func (b *backfillBundle) add(t *testing.T, in persist.EventInput) int64 {
	t.Helper()
	ctx := context.Background()
	in.WorkspaceID, in.ActorID = b.ws.ID, b.owner.ID
	if in.Type == "" {
		in.Type = "message.created"
	}
	ev, err := persist.WithTxV(ctx, b.store, func(tx *persist.Tx) (persist.Event, error) { return tx.EventAppend(ctx, in) })
	require.NoError(t, err)
	return ev.Cursor
}

func (b *backfillBundle) page(t *testing.T, actor persist.Actor, after int64, limit int, tail bool) (persist.EventPage, error) {
	ctx := context.Background()
	return persist.WithTxV(ctx, b.store, func(tx *persist.Tx) (persist.EventPage, error) {
		return tx.EventPageFor(ctx, actor, b.ws.ID, after, limit, tail)
	})
}

func cursors(events []persist.Event) []int64 {
	out := []int64{}
	for _, e := range events {
		out = append(out, e.Cursor)
	}
	return out
}

func TestEventPageFor(t *testing.T) {
	t.Parallel()
	b := setupBackfill(t)
	b.add(t, persist.EventInput{ChannelID: b.general})       // 3
	b.add(t, persist.EventInput{DirectConversationID: b.dm}) // 4
	b.add(t, persist.EventInput{ChannelID: b.guestChannel})  // 5
	b.add(t, persist.EventInput{Type: "workspace.updated"})  // 6
	b.add(t, persist.EventInput{ChannelID: b.general})       // 7
	t.Run("VisibilityPerViewer", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name  string
			actor persist.Actor
			want  []int64
			tail  int64
		}{
			{"Owner", b.ownerActor, []int64{1, 2, 3, 4, 5, 6, 7}, 7},
			{"OtherMemberMissesTheDM", b.otherActor, []int64{1, 2, 3, 5, 6, 7}, 7},
			{"GuestSeesGuestChannelAndOwnDM", b.guestActor, []int64{1, 4, 5}, 5},
		} {
			p, err := b.page(t, tc.actor, 0, 200, true)
			require.NoError(t, err, tc.name)
			require.Equal(t, tc.want, cursors(p.Events), tc.name)
			require.Equal(t, tc.tail, p.Tail, tc.name)
			require.Equal(t, int64(7), p.Next, tc.name)
			require.False(t, p.HasMore, tc.name)
		}
	})
	t.Run("Pages", func(t *testing.T) {
		t.Parallel()
		p, err := b.page(t, b.guestActor, 0, 2, false)
		require.NoError(t, err)
		require.Equal(t, []int64{1, 4}, cursors(p.Events))
		require.Equal(t, int64(4), p.Next)
		require.True(t, p.HasMore)
		require.Zero(t, p.Tail)
		p, err = b.page(t, b.guestActor, p.Next, 2, false)
		require.NoError(t, err)
		require.Equal(t, []int64{5}, cursors(p.Events))
		require.Equal(t, int64(7), p.Next, "the page skips what the guest may not see")
		require.False(t, p.HasMore)
	})
	t.Run("UnknownCursorNeedsResync", func(t *testing.T) {
		t.Parallel()
		_, err := b.page(t, b.ownerActor, 8, 10, false)
		e, ok := persist.ErrorOf(err)
		require.True(t, ok)
		require.Equal(t, persist.CodeResyncRequired, e.Code)
	})
	t.Run("NonMemberIsForbidden", func(t *testing.T) {
		t.Parallel()
		stranger := persisttest.User(t, b.store, nil)
		_, err := b.page(t, persist.ActorFor(stranger), 0, 10, false)
		e, ok := persist.ErrorOf(err)
		require.True(t, ok)
		require.Equal(t, persist.CodeForbidden, e.Code)
	})
}

func TestEventPrune(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	clock := now
	store := persisttest.NewStore(t, persisttest.WithClock(func() time.Time { return clock }))
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	ctx := context.Background()
	appendAt := func(at time.Time, n int) {
		clock = at
		for i := 0; i < n; i++ {
			require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error {
				_, err := tx.EventAppend(ctx, persist.EventInput{WorkspaceID: w.ID, Type: "test.event"})
				return err
			}))
		}
	}
	appendAt(now.AddDate(0, 0, -9), 4) // 1-4
	appendAt(now.AddDate(0, 0, -1), 4) // 5-8
	clock = now
	prune := func(p persist.EventPruneParams) (persist.EventPruneResult, error) {
		return persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.EventPruneResult, error) {
			return tx.EventPrune(ctx, w.ID, p)
		})
	}
	_, err := prune(persist.EventPruneParams{})
	require.Error(t, err, "a prune must say what to delete")

	week := now.AddDate(0, 0, -7)
	res, err := prune(persist.EventPruneParams{OlderThan: &week, KeepLatest: persisttest.Ptr(int64(6))})
	require.NoError(t, err)
	require.Equal(t, persist.EventPruneResult{Deleted: 2, PrunedThrough: 2}, res, "keep-latest wins over age")

	res, err = prune(persist.EventPruneParams{OlderThan: &week})
	require.NoError(t, err)
	require.Equal(t, persist.EventPruneResult{Deleted: 2, PrunedThrough: 4}, res)

	_, err = persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.EventPage, error) {
		return tx.EventPageFor(ctx, persist.ActorFor(owner), w.ID, 3, 10, false)
	})
	e, ok := persist.ErrorOf(err)
	require.True(t, ok)
	require.Equal(t, persist.CodeResyncRequired, e.Code, "a cursor behind the retained window needs a resync")
	for _, after := range []int64{0, 4, 6} {
		page, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.EventPage, error) {
			return tx.EventPageFor(ctx, persist.ActorFor(owner), w.ID, after, 10, false)
		})
		require.NoError(t, err)
		require.Equal(t, int64(max(after, 4)+1), page.Events[0].Cursor)
	}
}

func TestLocksAreExclusive(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	a, err := store.Locks(ctx)
	require.NoError(t, err)
	b, err := store.Locks(ctx)
	require.NoError(t, err)
	defer b.Close(ctx)
	ok, err := a.TryLock(ctx, 42)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = b.TryLock(ctx, 42)
	require.NoError(t, err)
	require.False(t, ok, "a held lock is not handed out twice")
	require.NoError(t, a.Close(ctx))
	ok, err = b.TryLock(ctx, 42)
	require.NoError(t, err)
	require.True(t, ok, "closing releases every lock")
}
