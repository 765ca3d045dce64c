package realtime

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/realtimetest"
	"github.com/natterchat/natter/streams"
)

// catchUpReads is how many catch-up reads hub h made from source (stream, postgres).
func catchUpReads(h *Hub, source string) int {
	return counted(h.metrics.catchUpReads.WithLabelValues(source))
}

// relayedTo waits until the workspace's stream holds cursor, and returns the stream.
func relayedTo(t *testing.T, e *env, cursor int64) jetstream.Stream {
	t.Helper()
	js, err := jetstream.New(e.nc)
	require.NoError(t, err)
	var s jetstream.Stream
	require.Eventually(t, func() bool {
		s, err = js.Stream(context.Background(), streams.StreamName(e.ws.ID))
		return err == nil && s.CachedInfo().State.LastSeq >= uint64(cursor)
	}, 10*time.Second, 10*time.Millisecond, "the relay did not publish cursor %d", cursor)
	return s
}

// liveFeed waits until the hub's feed of a workspace follows its stream.
func liveFeed(t *testing.T, h *Hub, workspaceID string) {
	t.Helper()
	require.Eventually(t, func() bool {
		h.mu.Lock()
		f := h.feeds[workspaceID]
		h.mu.Unlock()
		return f != nil && f.liveStart() != 0
	}, 10*time.Second, 5*time.Millisecond, "the feed did not start")
}

// expectCursors reads events until it has len(want) of them and checks their cursors, in order.
func expectCursors(t *testing.T, s *realtimetest.Socket, want ...int64) {
	t.Helper()
	for _, c := range want {
		require.Equal(t, strconv.FormatInt(c, 10), s.Next(t).Cursor)
	}
}

// TestCatchUpFromTheStream: a socket resuming from a cursor older than its feed's tail (here: a
// feed started after the events were relayed, so its tail is empty) is caught up from the
// stream, exactly once and in order, then goes live; no Postgres page is read. Twenty sockets
// resuming together from the same cursor share that one stream read.
func TestCatchUpFromTheStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	h := e.hubs[0]
	token := e.session(t, e.member)
	for i := range 5 {
		require.Equal(t, int64(2+i), e.add(t, "before "+strconv.Itoa(i)))
	}
	relayedTo(t, e, 6)
	first := e.dial(t, token, "1")
	expectCursors(t, first, 2, 3, 4, 5, 6)
	// Cursor 7 is added once the feed follows the stream, so it reaches the tail (a feed started
	// after it would read it from the stream with a second read, as it should).
	liveFeed(t, h, e.ws.ID)
	require.Equal(t, int64(7), e.add(t, "live"))
	expectCursors(t, first, 7)
	require.Equal(t, 0, catchUpReads(h, "postgres"))
	require.Equal(t, 1, catchUpReads(h, "stream"))
	require.Equal(t, 5, backfilled(h, "stream"))

	const n = 20
	sockets := make([]*realtimetest.Socket, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sockets[i], _ = realtimetest.DialSocket(t, e.urls[0], realtimetest.Dial{Token: token, Path: "/ws?after_cursor=1"})
		}()
	}
	wg.Wait()
	for i, s := range sockets {
		require.NotNil(t, s, "socket %d", i)
		expectCursors(t, s, 2, 3, 4, 5, 6, 7)
	}
	require.Equal(t, int64(8), e.add(t, "live again"))
	for _, s := range append(sockets, first) {
		expectCursors(t, s, 8) // nothing twice: the next frame is the next event
	}
	require.Equal(t, 0, catchUpReads(h, "postgres"))
	require.Equal(t, 1, catchUpReads(h, "stream"), "the sockets did not share the stream read")
}

// TestCatchUpFallsBackToPostgres: what the stream does not hold is read from Postgres: a message
// missing from the stream (the events around it still come from the stream), and a cursor older
// than the retained window, which Postgres answers with 4001.
func TestCatchUpFallsBackToPostgres(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	h := e.hubs[0]
	token := e.session(t, e.member)
	for i := range 5 {
		e.add(t, "before "+strconv.Itoa(i))
	}
	s := relayedTo(t, e, 6)
	ctx := context.Background()
	require.NoError(t, s.DeleteMsg(ctx, 4))
	sock := e.dial(t, token, "1")
	expectCursors(t, sock, 2, 3, 4, 5, 6)
	require.Equal(t, int64(7), e.add(t, "live"))
	expectCursors(t, sock, 7)
	require.GreaterOrEqual(t, catchUpReads(h, "postgres"), 1)
	require.Equal(t, 2, backfilled(h, "stream"), "2 and 3 come from the stream")

	keep := int64(2)
	_, err := persist.WithTxV(ctx, e.store, func(tx *persist.Tx) (persist.EventPruneResult, error) {
		return tx.EventPrune(ctx, e.ws.ID, persist.EventPruneParams{KeepLatest: &keep})
	})
	require.NoError(t, err)
	e.add(t, "after the prune") // wakes the relay, which purges the stream
	require.Eventually(t, func() bool {
		info, err := s.Info(ctx)
		return err == nil && info.State.FirstSeq > 2
	}, 10*time.Second, 10*time.Millisecond)
	before := catchUpReads(h, "postgres")
	resumed := e.dial(t, token, "1")
	require.Equal(t, ws.StatusCode(4001), resumed.ExpectClose(t))
	require.Equal(t, before+1, catchUpReads(h, "postgres"))
	// Cursors never issued are Postgres's to judge too, however large.
	for _, after := range []string{"99", "9223372036854775807"} {
		require.Equal(t, ws.StatusCode(4001), e.dial(t, token, after).ExpectClose(t), "after %s", after)
	}
}

// TestCatchUpFromTheStreamKeepsVisibility: catch-up from the stream applies the visibility
// rule: a direct conversation's events reach its members only, and a guest sees only the guest
// channel's events.
func TestCatchUpFromTheStreamKeepsVisibility(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	h := e.hubs[0]
	other, guestUser := persisttest.User(t, e.store, nil), persisttest.User(t, e.store, nil)
	persisttest.Member(t, e.store, e.ws.ID, other.ID, persist.RoleMember)
	persisttest.Member(t, e.store, e.ws.ID, guestUser.ID, persist.RoleGuest)
	guestCh := persisttest.Channel(t, e.store, persist.ActorFor(e.owner), e.ws.ID, persist.GuestChannel).ID
	dm := persisttest.DM(t, e.store, e.ws.ID, e.owner.ID, other.ID)
	ctx := context.Background()
	appendTo := func(in persist.EventInput) int64 {
		in.WorkspaceID, in.ActorID, in.Type, in.Payload = e.ws.ID, e.owner.ID, "message.created", map[string]string{"body": "x"}
		ev, err := persist.WithTxV(ctx, e.store, func(tx *persist.Tx) (persist.Event, error) { return tx.EventAppend(ctx, in) })
		require.NoError(t, err)
		return ev.Cursor
	}
	start := appendTo(persist.EventInput{ChannelID: e.general}) - 1
	inDM := appendTo(persist.EventInput{DirectConversationID: dm})
	inGeneral := appendTo(persist.EventInput{ChannelID: e.general})
	inGuest := appendTo(persist.EventInput{ChannelID: guestCh})
	relayedTo(t, e, inGuest)
	from := strconv.FormatInt(start, 10)

	member := e.dial(t, e.session(t, e.member), from)
	expectCursors(t, member, start+1, inGeneral, inGuest)
	party := e.dial(t, e.session(t, other), from)
	expectCursors(t, party, start+1, inDM, inGeneral, inGuest)
	guest := e.dial(t, e.session(t, guestUser), from)
	expectCursors(t, guest, inGuest)
	last := appendTo(persist.EventInput{ChannelID: guestCh})
	for _, s := range []*realtimetest.Socket{member, party, guest} {
		expectCursors(t, s, last)
	}
	require.Equal(t, 0, catchUpReads(h, "postgres"))
	require.GreaterOrEqual(t, catchUpReads(h, "stream"), 1)
}

// backfilled is how many events hub h sent while catching up from source (memory, stream,
// postgres).
func backfilled(h *Hub, source string) int {
	return counted(h.metrics.backfilled.WithLabelValues(source))
}

// TestCatchUpFromTheStreamAcrossBlocks: a catch-up longer than one block of the stream reads
// the next block where the first ends; every event arrives once, in order, none from Postgres.
func TestCatchUpFromTheStreamAcrossBlocks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	h := e.hubs[0]
	const last = 300 // blocks 1-256 and 257-512
	ctx := context.Background()
	require.NoError(t, e.store.WithTx(ctx, func(tx *persist.Tx) error {
		for i := 2; i <= last; i++ {
			if _, err := tx.EventAppend(ctx, persist.EventInput{WorkspaceID: e.ws.ID, ChannelID: e.general, ActorID: e.owner.ID,
				Type: "message.created", Payload: map[string]string{"body": strconv.Itoa(i)}}); err != nil {
				return err
			}
		}
		return nil
	}))
	relayedTo(t, e, last)
	s := e.dial(t, e.session(t, e.member), "1")
	for c := int64(2); c <= last; c++ {
		expectCursors(t, s, c)
	}
	liveFeed(t, h, e.ws.ID)
	require.Equal(t, int64(last+1), e.add(t, "live"))
	expectCursors(t, s, last+1)
	require.Equal(t, 0, catchUpReads(h, "postgres"))
	require.Equal(t, 2, catchUpReads(h, "stream"))
	require.Equal(t, last-1, backfilled(h, "stream"))
}

// TestCatchUpSharesOneStreamRead: twenty sockets reconnecting at once from five different
// cursors, all older than the feed's tail, are caught up by one read of the stream, each from
// its own cursor, exactly once and in order.
func TestCatchUpSharesOneStreamRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	h := e.hubs[0]
	token := e.session(t, e.member)
	for i := range 8 {
		e.add(t, "before "+strconv.Itoa(i)) // 2-9
	}
	relayedTo(t, e, 9)
	const n = 20
	sockets := make([]*realtimetest.Socket, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := strconv.Itoa(1 + i%5)
			sockets[i], _ = realtimetest.DialSocket(t, e.urls[0], realtimetest.Dial{Token: token, Path: "/ws?after_cursor=" + from})
		}()
	}
	wg.Wait()
	for i, s := range sockets {
		require.NotNil(t, s, "socket %d", i)
		for c := int64(2 + i%5); c <= 9; c++ {
			expectCursors(t, s, c)
		}
	}
	liveFeed(t, h, e.ws.ID)
	require.Equal(t, int64(10), e.add(t, "live"))
	for _, s := range sockets {
		expectCursors(t, s, 10)
	}
	require.Equal(t, 1, catchUpReads(h, "stream"))
	require.Equal(t, 0, catchUpReads(h, "postgres"))
}
