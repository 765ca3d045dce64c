package persist_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestMentionedHandles(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"ana", "bo_b", "c-d"}, persist.MentionedHandles("@Ana and @bo_b, (@c-d) @ana again", 10))
	require.Empty(t, persist.MentionedHandles("mail ana@example.com, @x, @ana@host, a@b", 10), "no handle of 2 to 32 characters after a lone @")
	require.Empty(t, persist.MentionedHandles("@"+strings.Repeat("a", 33), 10))
	require.Equal(t, []string{"ab", "cd"}, persist.MentionedHandles("@ab @cd @ef", 2))
}

// TestThreadFollowBackfill runs the statement with which migration 0026 fills thread_follows
// for the threads already there: roots' authors, repliers and people @mentioned by handle in
// the root or a reply, all read to the end.
func TestThreadFollowBackfill(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	owner := persisttest.User(t, store, &persisttest.UserOpts{Handle: persisttest.Ptr("own-er")})
	ws := persisttest.Workspace(t, store, owner.ID)
	ch := persisttest.Channel(t, store, persist.ActorFor(owner), ws.ID, "general")
	replier := persisttest.User(t, store, nil)
	named := persisttest.User(t, store, &persisttest.UserOpts{Handle: persisttest.Ptr("named_one")})
	outsider := persisttest.User(t, store, &persisttest.UserOpts{Handle: persisttest.Ptr("elsewhere")})
	bystander := persisttest.User(t, store, nil)
	for _, u := range []persist.User{replier, named, bystander} {
		persisttest.Member(t, store, ws.ID, u.ID, persist.RoleMember)
	}
	root, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.MessageCreated, error) {
		return tx.MessageCreate(ctx, persist.ActorFor(owner), persist.Place{ChannelID: ch.ID},
			persist.MessageCreateParams{Body: "mail me at x@named_one.org"})
	})
	require.NoError(t, err)
	for _, body := range []string{"first", "cc @Named_One and @elsewhere", "third"} {
		_, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.ReplyCreated, error) {
			return tx.ThreadReplyCreate(ctx, persist.ActorFor(replier), root.Message.ID, persist.MessageCreateParams{Body: body})
		})
		require.NoError(t, err)
	}
	sql, err := os.ReadFile("../migrations/0026_thread_follows.sql")
	require.NoError(t, err)
	_, backfill, ok := strings.Cut(string(sql), "-- The threads already there")
	require.True(t, ok)

	conn, err := pgx.Connect(ctx, persisttest.StoreURL(t, store))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `DELETE FROM thread_follows`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "--"+backfill)
	require.NoError(t, err)
	rows, err := conn.Query(ctx, `SELECT user_id, following, last_seq, last_read_seq FROM thread_follows
		WHERE root_message_id = $1 ORDER BY user_id`, root.Message.ID)
	require.NoError(t, err)
	type row struct {
		user              string
		following         bool
		lastSeq, lastRead int64
	}
	got := map[string]row{}
	for rows.Next() {
		var r row
		require.NoError(t, rows.Scan(&r.user, &r.following, &r.lastSeq, &r.lastRead))
		got[r.user] = r
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]row{
		owner.ID:   {owner.ID, true, 3, 3},
		replier.ID: {replier.ID, true, 3, 3},
		named.ID:   {named.ID, true, 3, 3},
	}, got, "not the outsider (no member), not the bystander, not an address")
	_ = outsider
}

// TestThreadFollowEditBesideAReply: an edit that adds a mention to a reply while another reply
// to the thread is being written waits for that reply, so the new follower's row counts it too
// (without waiting, the row would keep the thread's earlier last reply and miss one unread).
func TestThreadFollowEditBesideAReply(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	owner := persisttest.User(t, store, nil)
	ws := persisttest.Workspace(t, store, owner.ID)
	ch := persisttest.Channel(t, store, persist.ActorFor(owner), ws.ID, "general")
	late := persisttest.User(t, store, &persisttest.UserOpts{Handle: persisttest.Ptr("late_one")})
	persisttest.Member(t, store, ws.ID, late.ID, persist.RoleMember)
	root, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.MessageCreated, error) {
		return tx.MessageCreate(ctx, persist.ActorFor(owner), persist.Place{ChannelID: ch.ID}, persist.MessageCreateParams{Body: "plan?"})
	})
	require.NoError(t, err)
	reply := func(tx *persist.Tx, body string) error {
		_, err := tx.ThreadReplyCreate(ctx, persist.ActorFor(owner), root.Message.ID, persist.MessageCreateParams{Body: body})
		return err
	}
	first, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.ReplyCreated, error) {
		return tx.ThreadReplyCreate(ctx, persist.ActorFor(owner), root.Message.ID, persist.MessageCreateParams{Body: "first"})
	})
	require.NoError(t, err)

	// The second reply is written and held uncommitted while the edit runs.
	written, release, replied := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		held := false
		replied <- store.WithTx(ctx, func(tx *persist.Tx) error {
			if err := reply(tx, "second"); err != nil || held {
				return err
			}
			held = true
			close(written)
			<-release
			return nil
		})
	}()
	<-written
	edited := make(chan error, 1)
	go func() {
		edited <- store.WithTx(ctx, func(tx *persist.Tx) error {
			_, err := tx.MessageUpdate(ctx, persist.ActorFor(owner), first.Message.ID, "first, cc @late_one")
			return err
		})
	}()
	conn, err := pgx.Connect(ctx, persisttest.StoreURL(t, store))
	require.NoError(t, err)
	defer conn.Close(ctx)
	// Let the reply commit once the edit has finished without it or is waiting for it.
	editDone := false
	for !editDone {
		select {
		case err := <-edited:
			require.NoError(t, err)
			editDone = true
			continue
		default:
		}
		var waiting int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting))
		if waiting > 0 {
			break
		}
	}
	close(release)
	require.NoError(t, <-replied)
	if !editDone {
		require.NoError(t, <-edited)
	}
	var following bool
	var lastSeq, lastRead int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT following, last_seq, last_read_seq FROM thread_follows
		WHERE root_message_id = $1 AND user_id = $2`, root.Message.ID, late.ID).Scan(&following, &lastSeq, &lastRead))
	require.Equal(t, []any{true, int64(2), int64(0)}, []any{following, lastSeq, lastRead}, "following, both replies unread")
}
