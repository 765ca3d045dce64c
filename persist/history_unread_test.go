package persist_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestHistoryTombstonesCountAsDeletions: a root an import makes a tombstone (or brings back)
// moves the unread counts of its channel and conversation as a deletion does, for a reader who
// never read them and one part-way, each checked against the count of the definition (live
// roots by others after the mark) taken from the messages themselves.
func TestHistoryTombstonesCountAsDeletions(t *testing.T) {
	t.Parallel()
	s := newHistorySetup(t)
	ctx := context.Background()
	reader := persisttest.User(t, s.store, nil)
	halfway := persisttest.User(t, s.store, nil)
	for _, u := range []persist.User{reader, halfway} {
		persisttest.Member(t, s.store, s.ws.ID, u.ID, persist.RoleMember)
	}
	ch, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Imported, error) {
		return tx.HistoryChannel(ctx, s.h, persist.HistoryChannelParams{SourceID: "C1", Name: "imported"})
	})
	require.NoError(t, err)
	dm, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Imported, error) {
		return tx.HistoryConversation(ctx, s.h, persist.HistoryConversationParams{SourceID: "D1",
			MemberIDs: []string{s.owner.ID, reader.ID, halfway.ID}})
	})
	require.NoError(t, err)
	places := []persist.Place{{ChannelID: ch.ID}, {DMID: dm.ID}}
	var roots [][]string
	start := time.Now().Add(-time.Hour)
	for pi, place := range places {
		var ids []string
		for i := range 6 {
			author := s.owner.ID
			if i == 2 {
				author = reader.ID // the reader's own post never counts
			}
			m, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Imported, error) {
				return tx.HistoryMessage(ctx, s.h, persist.HistoryMessageParams{SourceID: string(rune('a'+pi)) + string(rune('0'+i)),
					Place: place, AuthorID: author, Body: "imported", CreatedAt: start.Add(time.Duration(i) * time.Minute)})
			})
			require.NoError(t, err)
			ids = append(ids, m.ID)
		}
		reply, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Imported, error) {
			return tx.HistoryMessage(ctx, s.h, persist.HistoryMessageParams{SourceID: string(rune('a'+pi)) + "r", Place: place,
				AuthorID: s.owner.ID, ParentID: ids[0], Body: "a reply", CreatedAt: start.Add(10 * time.Minute)})
		})
		require.NoError(t, err)
		ids = append(ids, reply.ID)
		roots = append(roots, ids)
		_, err = in(t, s, func(ctx context.Context, tx *persist.Tx) (persist.Receipt, error) {
			return tx.ReadMark(ctx, persist.ActorFor(halfway), place, 3)
		})
		require.NoError(t, err)
	}
	conn, err := pgx.Connect(ctx, persisttest.StoreURL(t, s.store))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	check := func(step string) {
		t.Helper()
		for _, u := range []persist.User{reader, halfway} {
			chans, err := in(t, s, func(ctx context.Context, tx *persist.Tx) ([]persist.Channel, error) {
				return tx.ChannelList(ctx, persist.ActorFor(u), s.ws.ID)
			})
			require.NoError(t, err)
			dms, err := in(t, s, func(ctx context.Context, tx *persist.Tx) ([]persist.DM, error) {
				return tx.DMList(ctx, persist.ActorFor(u), s.ws.ID)
			})
			require.NoError(t, err)
			got := map[string]int64{}
			for _, c := range chans {
				got[c.ID] = *c.UnreadCount
			}
			for _, d := range dms {
				got[d.ID] = d.UnreadCount
			}
			for _, place := range places {
				var want int64
				require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM messages m
					WHERE (m.channel_id = $1 OR m.dm_id = $1) AND m.channel_seq > coalesce((SELECT last_read_seq FROM read_receipts
						WHERE scope_id = $1 AND user_id = $2), 0) AND m.deleted_at IS NULL AND m.author_id <> $2`, place.ID(), u.ID).Scan(&want))
				require.Equal(t, want, got[place.ID()], "%s: %s in %s", step, u.ID, place.ID())
			}
		}
	}
	details := func(id string, deleted bool) {
		t.Helper()
		d := persist.HistoryMessageDetails{}
		if deleted {
			d.DeletedAt = persisttest.Ptr(start.Add(time.Hour))
		}
		_, err := in(t, s, func(ctx context.Context, tx *persist.Tx) (struct{}, error) {
			return struct{}{}, tx.HistoryMessageDetails(ctx, s.h, id, d)
		})
		require.NoError(t, err)
	}
	check("imported")
	for i := range places {
		details(roots[i][1], true) // before the halfway reader's mark
		details(roots[i][4], true) // after it
		details(roots[i][4], true) // a tombstone again changes nothing
		details(roots[i][2], true) // the reader's own
		details(roots[i][6], true) // a reply takes no sequence
	}
	check("tombstones")
	for i := range places {
		details(roots[i][4], false)
	}
	check("one brought back")
}
