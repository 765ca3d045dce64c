package benchdata

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestHistoryIsWhatPersistWrites checks that the COPY'd history has the rows persist's own
// writes leave, by the rules those writes keep, and that persist carries on from it: the next
// post, reply and reaction take the next numbers, and unread counts match their definition.
func TestHistoryIsWhatPersistWrites(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := persisttest.URL(t)
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })

	p, err := seedPeople(ctx, store, 12, "t")
	require.NoError(t, err)
	w, err := seedWorkspace(ctx, store, p, "t-ws", 3, 1)
	require.NoError(t, err)
	require.NoError(t, w.seedHistory(ctx, conn, p, 3000, 1))
	require.NoError(t, w.findBusiest(ctx, store, p))

	one := func(sql string, args ...any) int64 {
		t.Helper()
		var n int64
		require.NoError(t, conn.QueryRow(ctx, sql, args...).Scan(&n))
		return n
	}
	require.EqualValues(t, 3000, one(`SELECT count(*) FROM messages WHERE workspace_id = $1`, w.ws.ID))
	require.Positive(t, one(`SELECT count(*) FROM messages WHERE workspace_id = $1 AND parent_message_id IS NOT NULL`, w.ws.ID))
	require.Positive(t, one(`SELECT count(*) FROM messages WHERE workspace_id = $1 AND deleted_at IS NOT NULL`, w.ws.ID))
	require.Positive(t, one(`SELECT count(*) FROM messages WHERE workspace_id = $1 AND edited_at IS NOT NULL`, w.ws.ID))
	require.Positive(t, one(`SELECT count(*) FROM reactions WHERE workspace_id = $1`, w.ws.ID))
	require.Zero(t, one(`SELECT count(*) FROM (
			SELECT p.id FROM (SELECT id, last_seq FROM channels WHERE workspace_id = $1 UNION ALL SELECT id, last_seq FROM dms WHERE workspace_id = $1) p
			LEFT JOIN messages m ON (m.channel_id = p.id OR m.dm_id = p.id) AND m.channel_seq IS NOT NULL
			GROUP BY p.id, p.last_seq HAVING count(m.id) <> p.last_seq OR coalesce(max(m.channel_seq), 0) <> p.last_seq) bad`, w.ws.ID),
		"each place's roots take 1..last_seq")
	require.Zero(t, one(`SELECT count(*) FROM (SELECT id, deleted_roots FROM channels WHERE workspace_id = $1
			UNION ALL SELECT id, deleted_roots FROM dms WHERE workspace_id = $1) p
			WHERE p.deleted_roots <> (SELECT count(*) FROM messages m WHERE (m.channel_id = p.id OR m.dm_id = p.id)
				AND m.channel_seq IS NOT NULL AND m.deleted_at IS NOT NULL)`, w.ws.ID),
		"each place counts its deleted roots")
	require.Zero(t, one(`SELECT count(*) FROM thread_states ts
			JOIN LATERAL (SELECT max(thread_seq) AS last, count(*) FILTER (WHERE deleted_at IS NULL) AS live, max(created_at) AS at,
				count(DISTINCT thread_seq) AS seqs FROM messages WHERE thread_root_id = ts.root_message_id AND thread_seq IS NOT NULL) r ON true
			WHERE ts.workspace_id = $1 AND (ts.last_thread_seq <> r.last OR ts.reply_count <> r.live OR ts.last_reply_at <> r.at OR r.seqs <> r.last)`, w.ws.ID),
		"thread states count the replies as replies do")
	require.Zero(t, one(`SELECT count(*) FROM messages m WHERE m.workspace_id = $1 AND m.parent_message_id IS NOT NULL
			AND NOT EXISTS (SELECT 1 FROM thread_states WHERE root_message_id = m.thread_root_id)`, w.ws.ID))
	require.Zero(t, one(`SELECT count(*) FROM reaction_counts rc WHERE rc.workspace_id = $1
			AND rc.count <> (SELECT count(*) FROM reactions r WHERE r.message_id = rc.message_id AND r.emoji = rc.emoji)`, w.ws.ID))
	require.Zero(t, one(`SELECT count(*) FROM messages m WHERE m.workspace_id = $1 AND m.deleted_at IS NOT NULL
			AND (m.body <> '' OR EXISTS (SELECT 1 FROM reactions r WHERE r.message_id = m.id))`, w.ws.ID), "a deletion empties and unreacts")
	require.Zero(t, one(`SELECT count(*) FROM messages m WHERE m.workspace_id = $1
			AND ((m.parent_message_id IS NULL) <> (m.route_id IS NOT NULL))`, w.ws.ID), "route ids on roots only")

	// persist carries on where the history ends.
	busiest := w.busiest
	author := persist.ActorFor(p.users[5])
	posted, err := persist.BatchMessageCreate(ctx, store, author, persist.Place{ChannelID: busiest.ID}, persist.MessageCreateParams{Body: "after the history"})
	require.NoError(t, err)
	require.Equal(t, busiest.LastSeq+1, *posted.Message.ChannelSeq)
	var lastThread int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT last_thread_seq FROM thread_states WHERE root_message_id = $1`, w.thread).Scan(&lastThread))
	reply, err := persist.BatchOnMessage(ctx, store, w.thread, func(tx *persist.Tx) (persist.ReplyCreated, error) {
		return tx.ThreadReplyCreate(ctx, author, w.thread, persist.MessageCreateParams{Body: "a reply after the history"})
	})
	require.NoError(t, err)
	require.Equal(t, lastThread+1, *reply.Message.ThreadSeq)

	halfway := p.users[4] // has read half of every channel; p.nothing() has read nothing
	require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error {
		for _, c := range w.channels {
			if _, err := tx.ReadMark(ctx, persist.ActorFor(halfway), persist.Place{ChannelID: c.ID}, 1+one(`SELECT last_seq FROM channels WHERE id = $1`, c.ID)/2); err != nil {
				return err
			}
		}
		return nil
	}))
	for _, u := range []persist.User{p.nothing(), halfway} {
		chans, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Channel, error) {
			return tx.ChannelList(ctx, persist.ActorFor(u), w.ws.ID)
		})
		require.NoError(t, err)
		for _, c := range chans {
			require.Equal(t, one(`SELECT count(*) FROM messages m WHERE m.channel_id = $1 AND m.channel_seq > $2
				AND m.deleted_at IS NULL AND m.author_id <> $3`, c.ID, *c.LastReadSeq, u.ID), *c.UnreadCount)
		}
	}
}

// TestPersonasBusiestConversationHoldsAPage: the reads time each persona's busiest direct
// conversation's latest page (100 messages) in the 10,000-message workspace and the large one:
// both must hold a full page, or the small workspace times a different, smaller read. And the
// thread they time is a channel's, which both readers may read (in the small workspace most
// replies are in the personas' conversations).
func TestPersonasBusiestConversationHoldsAPage(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := persisttest.URL(t)
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })

	p, err := seedPeople(ctx, store, 200, "t")
	require.NoError(t, err)
	// 10,000 messages, a tenth of them in about 1,000 conversations: about one each, without
	// the personas' share.
	w, err := seedWorkspace(ctx, store, p, "t-dms", 1000, 1)
	require.NoError(t, err)
	require.Greater(t, len(w.dms), 900)
	require.NoError(t, w.seedHistory(ctx, conn, p, 10000, 1))
	require.NoError(t, w.findBusiest(ctx, store, p))
	for _, u := range []persist.User{p.nothing(), p.everything()} {
		var roots int64
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM messages WHERE dm_id = $1 AND channel_seq IS NOT NULL`,
			w.personaD[u.ID]).Scan(&roots))
		require.Greater(t, roots, int64(100), "%s's busiest conversation holds more than a page of 100", u.Handle)
	}
	var inChannel bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT channel_id IS NOT NULL FROM messages WHERE id = $1`, w.thread).Scan(&inChannel))
	require.True(t, inChannel)
}

// TestTheTimedThreadIsAChannels: a thread in a persona's conversation with more replies than
// any channel's is not the one the reads time (the other persona may not read it).
func TestTheTimedThreadIsAChannels(t *testing.T) {
	h := &history{order: []string{"c1", "dm", "c2", "c3"}, threads: map[string]*threadAgg{
		"c1": {inChannel: true, last: 3}, "dm": {last: 9}, "c2": {inChannel: true, last: 5}, "c3": {inChannel: true, last: 5}}}
	require.Equal(t, "c2", h.busiestChannelThread())
	require.Empty(t, (&history{order: []string{"dm"}, threads: map[string]*threadAgg{"dm": {last: 1}}}).busiestChannelThread())
}
