package realtime

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/realtimetest"
	"github.com/natterchat/natter/streams/streamstest"
)

// lookups is how many handshake look-ups of kind (session, membership) hub h answered from source
// (cache, postgres).
func lookups(h *Hub, kind, source string) int {
	return counted(h.handshake.lookups.WithLabelValues(kind, source))
}

// listening waits until every hub hears the announcements, from when its cache answers.
func listening(t *testing.T, e *env) {
	t.Helper()
	for _, h := range e.hubs {
		require.Eventually(t, func() bool { return h.handshake.sub.Load() != nil }, 10*time.Second, 5*time.Millisecond)
	}
}

// handshakeEnv has two replicas whose sockets are never rechecked on a timer within a test, so
// only the announcements can end them.
func handshakeEnv(t *testing.T) *env {
	e := newEnv(t, 2, func(c *Config) { c.RevalidateInterval = time.Hour })
	listening(t, e)
	return e
}

// warm opens a socket with token on each replica twice, the second from the cache, and returns
// the sockets.
func warm(t *testing.T, e *env, token string) []*realtimetest.Socket {
	t.Helper()
	var out []*realtimetest.Socket
	for i := range e.hubs {
		for range 2 {
			out = append(out, e.dialOn(t, i, realtimetest.Dial{Token: token}, "1"))
		}
	}
	return out
}

func refusedOn(t *testing.T, e *env, token string) []int {
	t.Helper()
	var statuses []int
	for i := range e.urls {
		_, status := realtimetest.DialSocket(t, e.urls[i], realtimetest.Dial{Token: token, Path: "/ws?after_cursor=1"})
		statuses = append(statuses, status)
	}
	return statuses
}

// TestHandshakeCacheHit: a reconnect with the same session asks Postgres nothing.
func TestHandshakeCacheHit(t *testing.T) {
	t.Parallel()
	e := handshakeEnv(t)
	token := e.session(t, e.member)
	h := e.hubs[0]
	for range 4 {
		e.dialOn(t, 0, realtimetest.Dial{Token: token}, "1")
	}
	require.Equal(t, 1, lookups(h, "session", "postgres"))
	require.Equal(t, 1, lookups(h, "membership", "postgres"))
	require.Equal(t, 3, lookups(h, "session", "cache"))
	require.Equal(t, 3, lookups(h, "membership", "cache"))
	// Another session of the same person needs its own session look-up, not a membership one.
	e.dialOn(t, 0, realtimetest.Dial{Token: e.session(t, e.member)}, "1")
	require.Equal(t, 2, lookups(h, "session", "postgres"))
	require.Equal(t, 1, lookups(h, "membership", "postgres"))
}

// TestHandshakeAfterLogout: a logout closes the session's sockets on both replicas with 1008, and
// a reconnect with it is refused on both, though each had it cached; the person's other session
// still connects.
func TestHandshakeAfterLogout(t *testing.T) {
	t.Parallel()
	e := handshakeEnv(t)
	token, other := e.session(t, e.member), e.session(t, e.member)
	sockets := warm(t, e, token)
	warm(t, e, other)
	ctx := context.Background()
	require.NoError(t, e.store.WithTx(ctx, func(tx *persist.Tx) error { return tx.SessionRevoke(ctx, token) }))
	for i, s := range sockets {
		require.Equal(t, ws.StatusCode(1008), s.ExpectClose(t), "socket %d", i)
	}
	require.Equal(t, []int{401, 401}, refusedOn(t, e, token))
	for i := range e.hubs {
		e.dialOn(t, i, realtimetest.Dial{Token: other}, "1")
	}
}

// TestHandshakeAfterRemoval: a member removed closes their sockets on both replicas, and their
// reconnect is refused with 403 on both; the owner's cached membership still serves.
func TestHandshakeAfterRemoval(t *testing.T) {
	t.Parallel()
	e := handshakeEnv(t)
	token, owner := e.session(t, e.member), e.session(t, e.owner)
	sockets := warm(t, e, token)
	warm(t, e, owner)
	ctx := context.Background()
	require.NoError(t, e.store.WithTx(ctx, func(tx *persist.Tx) error {
		_, _, err := tx.MemberRemove(ctx, persist.ActorFor(e.owner), e.ws.ID, e.member.ID)
		return err
	}))
	for i, s := range sockets {
		require.Equal(t, ws.StatusCode(1008), s.ExpectClose(t), "socket %d", i)
	}
	require.Equal(t, []int{403, 403}, refusedOn(t, e, token))
	for i, h := range e.hubs {
		before := lookups(h, "membership", "postgres")
		e.dialOn(t, i, realtimetest.Dial{Token: owner}, "1")
		require.Equal(t, before, lookups(h, "membership", "postgres"), "replica %d", i)
	}
}

// TestHandshakeAfterWorkspaceDeletion: every cached membership of a deleted workspace goes, so a
// reconnect is refused with 404 on both replicas.
func TestHandshakeAfterWorkspaceDeletion(t *testing.T) {
	t.Parallel()
	e := handshakeEnv(t)
	token, owner := e.session(t, e.member), e.session(t, e.owner)
	sockets := append(warm(t, e, token), warm(t, e, owner)...)
	ctx := context.Background()
	require.NoError(t, e.store.WithTx(ctx, func(tx *persist.Tx) error {
		return tx.WorkspaceDelete(ctx, persist.ActorFor(e.owner), e.ws.ID)
	}))
	for i, s := range sockets {
		require.Equal(t, ws.StatusCode(1008), s.ExpectClose(t), "socket %d", i)
	}
	require.Equal(t, []int{404, 404}, refusedOn(t, e, token))
	require.Equal(t, []int{404, 404}, refusedOn(t, e, owner))
}

// TestHandshakeAfterModeration: demoting a member to the waiting room, or blocking them, is
// announced; each replica's next handshake for them reads Postgres again and joins with what it
// says (a guest's view; a blocked member still reads, as blocking stops only writing).
func TestHandshakeAfterModeration(t *testing.T) {
	t.Parallel()
	e := handshakeEnv(t)
	token := e.session(t, e.member)
	warm(t, e, token)
	ctx := context.Background()
	gen := func(h *Hub) uint64 {
		h.handshake.mu.Lock()
		defer h.handshake.mu.Unlock()
		return h.handshake.gen
	}
	moderate := func(p persist.ModerationPatch) {
		t.Helper()
		before := make([]uint64, len(e.hubs))
		for i, h := range e.hubs {
			before[i] = gen(h)
		}
		require.NoError(t, e.store.WithTx(ctx, func(tx *persist.Tx) error {
			_, _, err := tx.MemberModerate(ctx, persist.ActorFor(e.owner), e.ws.ID, e.member.ID, p)
			return err
		}))
		key := viewerKey{e.ws.ID, e.member.ID}
		for i, h := range e.hubs {
			h.handshake.mu.Lock()
			_, cached := h.handshake.viewers[key]
			h.handshake.mu.Unlock()
			require.False(t, cached, "the commit's own listener left the membership cached on replica %d", i)
			// Then the announcement: a look-up it overtakes would not be kept (both hubs of this
			// env share a store, so each hears the commit and the announcement).
			require.Eventually(t, func() bool { return gen(h) >= before[i]+2 }, 10*time.Second, 5*time.Millisecond,
				"the announcement did not reach replica %d", i)
		}
	}
	guest := persist.RoleGuest
	moderate(persist.ModerationPatch{Role: &guest})
	for i, h := range e.hubs {
		require.Equal(t, 1, lookups(h, "membership", "postgres"), "replica %d", i)
		e.dialOn(t, i, realtimetest.Dial{Token: token}, "1")
		require.Equal(t, 2, lookups(h, "membership", "postgres"), "replica %d", i)
		h.handshake.mu.Lock()
		cached := h.handshake.viewers[viewerKey{e.ws.ID, e.member.ID}]
		h.handshake.mu.Unlock()
		require.True(t, cached.viewer.Guest, "replica %d", i)
	}
	blocked := true
	moderate(persist.ModerationPatch{Blocked: &blocked})
	for i, h := range e.hubs {
		e.dialOn(t, i, realtimetest.Dial{Token: token}, "1")
		require.Equal(t, 3, lookups(h, "membership", "postgres"), "replica %d", i)
	}
}

// TestHandshakeLookupRacingAnnouncement: a look-up that began before an announcement arrived may
// have read the database before the change committed; its result is not kept.
func TestHandshakeLookupRacingAnnouncement(t *testing.T) {
	t.Parallel()
	e := handshakeEnv(t)
	c := e.hubs[0].handshake
	key := viewerKey{e.ws.ID, e.member.ID}
	sess := persist.Session{ID: "s1", ExpiresAt: time.Now().Add(time.Hour)}

	c.mu.Lock()
	gen, ok := c.beginLocked()
	c.mu.Unlock()
	require.True(t, ok)
	c.revoke(persist.Revocation{WorkspaceID: e.ws.ID, UserID: e.member.ID})
	c.fillViewer(gen, key, viewerEntry{at: time.Now(), viewer: persist.Viewer{WorkspaceID: e.ws.ID, UserID: e.member.ID}})
	c.fillSession(gen, "hash", sessionEntry{at: time.Now(), session: sess})
	require.Empty(t, c.viewers)
	require.Empty(t, c.sessions)

	// One that began after it is kept.
	c.mu.Lock()
	gen, _ = c.beginLocked()
	c.mu.Unlock()
	c.fillSession(gen, "hash", sessionEntry{at: time.Now(), session: sess})
	require.Len(t, c.sessions, 1)
	c.revoke(persist.Revocation{SessionID: "s1"})
	require.Empty(t, c.sessions)
	require.Empty(t, c.bySession)
}

// TestHandshakeCacheBounded: the cache never holds more than its size, and an entry past its TTL
// is asked of Postgres again.
func TestHandshakeCacheBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, func(c *Config) {
		c.RevalidateInterval = time.Hour
		c.HandshakeCacheSize = 2
		c.HandshakeTTL = 200 * time.Millisecond
	})
	listening(t, e)
	h := e.hubs[0]
	var tokens []string
	for range 3 {
		tokens = append(tokens, e.session(t, e.member))
	}
	for _, tok := range tokens {
		e.dialOn(t, 0, realtimetest.Dial{Token: tok}, "1")
		h.handshake.mu.Lock()
		require.LessOrEqual(t, len(h.handshake.sessions), 2)
		h.handshake.mu.Unlock()
	}
	time.Sleep(250 * time.Millisecond) // past the TTL
	before := lookups(h, "session", "postgres")
	e.dialOn(t, 0, realtimetest.Dial{Token: tokens[2]}, "1")
	require.Equal(t, before+1, lookups(h, "session", "postgres"))
}

// TestHandshakeSessionExpiry: a cached session past its own expiry, which nothing announces, is
// asked of Postgres again.
func TestHandshakeSessionExpiry(t *testing.T) {
	t.Parallel()
	e := handshakeEnv(t)
	h := e.hubs[0]
	token := e.session(t, e.member)
	ctx := context.Background()
	_, _, err := h.ResolveSession(ctx, token)
	require.NoError(t, err)
	_, _, err = h.ResolveSession(ctx, token)
	require.NoError(t, err)
	require.Equal(t, 1, lookups(h, "session", "postgres"))
	hash := string(persist.HashSecret(token))
	h.handshake.mu.Lock()
	entry := h.handshake.sessions[hash]
	entry.session.ExpiresAt = time.Now().Add(-time.Second)
	h.handshake.sessions[hash] = entry
	h.handshake.mu.Unlock()
	_, _, err = h.ResolveSession(ctx, token)
	require.NoError(t, err)
	require.Equal(t, 2, lookups(h, "session", "postgres"))
}

// TestHandshakeCoalescesMisses: a burst of handshakes of one session that all miss the cache
// together asks Postgres once for the session and once for the membership.
func TestHandshakeCoalescesMisses(t *testing.T) {
	t.Parallel()
	e := handshakeEnv(t)
	h := e.hubs[0]
	token := e.session(t, e.member)
	const n = 40
	var wg sync.WaitGroup
	start := make(chan struct{})
	statuses := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, statuses[i] = realtimetest.DialSocket(t, e.urls[0], realtimetest.Dial{Token: token, Path: "/ws?after_cursor=1"})
		}()
	}
	close(start)
	wg.Wait()
	for i, status := range statuses {
		require.Equal(t, 101, status, "handshake %d", i)
	}
	require.Equal(t, 1, lookups(h, "session", "postgres"))
	require.Equal(t, 1, lookups(h, "membership", "postgres"))
	require.Equal(t, n-1, lookups(h, "session", "cache"))
	require.Equal(t, n-1, lookups(h, "membership", "cache"))
}

// TestHandshakeCoalescingRespectsAnnouncements: a handshake that misses after an announcement
// does not join a look-up begun before it (which may have read the database before the change
// committed); it reads again, and the older look-up's result is not kept.
func TestHandshakeCoalescingRespectsAnnouncements(t *testing.T) {
	t.Parallel()
	e := handshakeEnv(t)
	c := e.hubs[0].handshake
	key := viewerKey{e.ws.ID, e.member.ID}
	get := func(time.Time) (viewerEntry, bool) { e, ok := c.viewers[key]; return e, ok }
	put := func(gen uint64, v viewerEntry) { c.fillViewer(gen, key, v) }
	var reads atomic.Int32
	entered, release := make(chan struct{}), make(chan struct{})
	first := make(chan viewerEntry)
	go func() {
		v, _ := cached(context.Background(), c, "membership", "k", get, func(context.Context, time.Time) (viewerEntry, error) {
			reads.Add(1)
			close(entered)
			<-release
			return viewerEntry{at: time.Now(), viewer: persist.Viewer{UserID: "before"}}, nil
		}, put)
		first <- v
	}()
	<-entered
	c.revoke(persist.Revocation{WorkspaceID: e.ws.ID, UserID: e.member.ID})
	v, err := cached(context.Background(), c, "membership", "k", get, func(context.Context, time.Time) (viewerEntry, error) {
		reads.Add(1)
		return viewerEntry{at: time.Now(), viewer: persist.Viewer{UserID: "after"}}, nil
	}, put)
	require.NoError(t, err)
	require.Equal(t, "after", v.viewer.UserID)
	require.Equal(t, int32(2), reads.Load())
	close(release)
	require.Equal(t, "before", (<-first).viewer.UserID)
	c.mu.Lock()
	require.Equal(t, "after", c.viewers[key].viewer.UserID, "the look-up begun before the announcement filled the cache")
	c.mu.Unlock()
}

// TestHandshakeBotTokenRevoked: a bot token's standing is answered from the cache on each
// replica after the first handshake; revoking the token closes its sockets on both replicas with
// 1008 (no periodic check runs within the test: only the announcement can), and its next
// handshake is refused on both; the bot's other token still connects.
func TestHandshakeBotTokenRevoked(t *testing.T) {
	t.Parallel()
	e := handshakeEnv(t)
	bot, tokA := persisttest.Bot(t, e.store, e.owner, e.ws.ID, nil)
	tokB := persisttest.BotToken(t, e.store, e.owner, e.ws.ID, bot.ID)
	a, b := e.bot(t, bot, tokA), e.bot(t, bot, tokB)
	sockets := warm(t, e, a)
	for i, h := range e.hubs {
		require.Equal(t, 1, lookups(h, "membership", "postgres"), "replica %d", i)
		require.Equal(t, 1, lookups(h, "membership", "cache"), "replica %d", i)
	}
	warm(t, e, b)
	ctx := context.Background()
	_, err := persist.WithTxV(ctx, e.store, func(tx *persist.Tx) (persist.BotToken, error) {
		return tx.BotTokenRevoke(ctx, persist.ActorFor(e.owner), tokA.ID)
	})
	require.NoError(t, err)
	for i, s := range sockets {
		require.Equal(t, ws.StatusCode(1008), s.ExpectClose(t), "socket %d", i)
	}
	require.Equal(t, []int{401, 401}, refusedOn(t, e, a))
	for i := range e.hubs {
		e.dialOn(t, i, realtimetest.Dial{Token: b}, "1")
	}
}

// TestHandshakeUserBotOwnerRemoved: a user bot stands on its owner's membership; removing the
// owner closes the bot's sockets on both replicas and refuses its next handshake on both, though
// each had the bot's token and standing cached.
func TestHandshakeUserBotOwnerRemoved(t *testing.T) {
	t.Parallel()
	e := handshakeEnv(t)
	bot, tok := persisttest.Bot(t, e.store, e.member, e.ws.ID, &persisttest.BotOpts{UserBot: true})
	token := e.bot(t, bot, tok)
	sockets := warm(t, e, token)
	ctx := context.Background()
	require.NoError(t, e.store.WithTx(ctx, func(tx *persist.Tx) error {
		_, _, err := tx.MemberRemove(ctx, persist.ActorFor(e.owner), e.ws.ID, e.member.ID)
		return err
	}))
	for i, s := range sockets {
		require.Equal(t, ws.StatusCode(1008), s.ExpectClose(t), "socket %d", i)
	}
	for i, status := range refusedOn(t, e, token) {
		require.Contains(t, []int{401, 403}, status, "replica %d", i)
	}
}

// TestHandshakeBotRemovedFromWorkspace: taking a bot out of the workspace revokes its tokens
// there with no announcement of their own; the membership announcement drops the cached token
// too, so its next handshake is refused on both replicas.
func TestHandshakeBotRemovedFromWorkspace(t *testing.T) {
	t.Parallel()
	e := handshakeEnv(t)
	bot, tok := persisttest.Bot(t, e.store, e.owner, e.ws.ID, nil)
	token := e.bot(t, bot, tok)
	sockets := warm(t, e, token)
	ctx := context.Background()
	require.NoError(t, e.store.WithTx(ctx, func(tx *persist.Tx) error {
		return tx.BotMembershipRemove(ctx, persist.ActorFor(e.owner), e.ws.ID, bot.ID)
	}))
	for i, s := range sockets {
		require.Equal(t, ws.StatusCode(1008), s.ExpectClose(t), "socket %d", i)
	}
	require.Equal(t, []int{401, 401}, refusedOn(t, e, token))
}

// TestSessionDroppedByThisReplicasCommit: a session this replica ends is out of its cache when
// the ending transaction returns, before any request after it is answered. The store here
// announces nothing, so only the commit's own listener can tell the hub.
func TestSessionDroppedByThisReplicasCommit(t *testing.T) {
	t.Parallel()
	_, nc := streamstest.Embedded(t)
	store := persisttest.NewStore(t)
	hub, err := New(Config{Store: store, NATS: nc, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hub.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	waitRunning(t, hub)
	require.Eventually(t, func() bool { return hub.handshake.sub.Load() != nil }, 10*time.Second, 5*time.Millisecond)

	user := persisttest.User(t, store, nil)
	token, kept := persisttest.Session(t, store, user.ID), persisttest.Session(t, store, user.ID)
	for range 2 {
		for _, tk := range []string{token, kept} {
			_, u, err := hub.ResolveSession(ctx, tk)
			require.NoError(t, err)
			require.Equal(t, user.ID, u.ID)
		}
	}
	require.Equal(t, 2, lookups(hub, "session", "cache"), "the second round came from memory")
	require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error { return tx.SessionRevoke(ctx, token) }))
	_, _, err = hub.ResolveSession(ctx, token)
	e, ok := persist.ErrorOf(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, persist.CodeUnauthenticated, e.Code)
	_, _, err = hub.ResolveSession(ctx, kept)
	require.NoError(t, err, "the person's other session is untouched")
}
