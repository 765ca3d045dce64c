package realtime

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/realtimetest"
)

// presenceTTL is the tests' registration lifetime: a replica that stops renews for it, a
// third more, is swept.
const presenceTTL = time.Second

func presenceConfig(c *Config) { c.PresenceTTL, c.PresenceFlush = presenceTTL, 20*time.Millisecond }

// startReplica runs one more hub on e's store and NATS, with a lifetime of its own: stop ends
// it as a crash would for presence (the replica renews nothing more; its sockets close).
func startReplica(t *testing.T, e *env) (url string, hub *Hub, stop func()) {
	t.Helper()
	cfg := Config{Store: e.store, NATS: e.nc, Logger: e.hubs[0].logger, Workers: 2, SweepInterval: 50 * time.Millisecond}
	presenceConfig(&cfg)
	hub, err := New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hub.Run(ctx) }()
	waitRunning(t, hub)
	ts := httptest.NewServer(e.handler(hub))
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
			ts.Close()
		}
	}
	t.Cleanup(stop)
	return ts.URL, hub, stop
}

// watch signs u in with a socket on replica 0 that asked for presence.
func (e *env) watch(t *testing.T, u persist.User) *realtimetest.Socket {
	t.Helper()
	token := e.session(t, u)
	e.mu.Lock()
	j := e.joins[token]
	j.Presence = true
	e.joins[token] = j
	e.mu.Unlock()
	return e.dial(t, token, "1")
}

type presenceEvent struct {
	UserID  string `json:"user_id"`
	Online  bool   `json:"online"`
	Status  string `json:"status"`
	Version int64  `json:"version"`
}

// nextPresence requires the socket's next event to be a presence change of user.
func nextPresence(t *testing.T, s *realtimetest.Socket, user string, online bool) presenceEvent {
	t.Helper()
	ev := s.Next(t)
	require.Equal(t, "presence.changed", ev.Type, "payload %s", ev.Payload)
	require.Equal(t, "", ev.Cursor)
	require.Equal(t, "", ev.ChannelID+ev.DirectConversationID, "workspace-wide")
	var p presenceEvent
	require.NoError(t, json.Unmarshal(ev.Payload, &p))
	status := map[bool]string{true: "online", false: "offline"}[online]
	require.Equal(t, presenceEvent{UserID: user, Online: online, Status: status, Version: p.Version}, p)
	require.Equal(t, user, ev.ActorID)
	return p
}

func (e *env) online(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	list, err := persist.ReadV(ctx, e.store, func(tx *persist.Reader) ([]persist.OnlineMember, error) {
		return tx.PresenceOnline(ctx, persist.ActorFor(e.owner), e.ws.ID)
	})
	require.NoError(t, err)
	ids := []string{}
	for _, m := range list {
		ids = append(ids, m.UserID)
	}
	return ids
}

// presenceRecord reads Postgres's record of presence on a connection of the test's own.
type presenceRecord struct {
	e  *env
	pg *pgx.Conn
}

func newPresenceRecord(t *testing.T, e *env) presenceRecord {
	t.Helper()
	ctx := context.Background()
	pg, err := pgx.Connect(ctx, persisttest.StoreURL(t, e.store))
	require.NoError(t, err)
	t.Cleanup(func() { _ = pg.Close(ctx) })
	return presenceRecord{e: e, pg: pg}
}

// counting is how many replicas hold a socket of user (0: offline).
func (r presenceRecord) counting(t *testing.T, user string) int {
	t.Helper()
	var n int
	require.NoError(t, r.pg.QueryRow(context.Background(), `SELECT coalesce(sum(replicas), 0) FROM presence_users
		WHERE workspace_id = $1 AND user_id = $2`, r.e.ws.ID, user).Scan(&n))
	return n
}

// waitCounting waits until n replicas hold a socket of user.
func (r presenceRecord) waitCounting(t *testing.T, user string, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return r.counting(t, user) == n }, 10*time.Second, 5*time.Millisecond,
		"%s held on %d replicas", user, n)
}

// hold keeps every sweep from expiring the hub's registration until release: a transaction of
// the test's holds its row FOR KEY SHARE, which the replica's renewal does not wait for and a
// sweep (FOR UPDATE SKIP LOCKED) passes by. The test decides when a dead replica may be swept,
// instead of racing a machine under load against the registration's lifetime.
func (r presenceRecord) hold(t *testing.T, h *Hub) (release func()) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, persisttest.StoreURL(t, r.e.store))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(ctx) })
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	var held int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT FROM presence_replicas WHERE id = $1 FOR KEY SHARE) AS r`,
		h.presence.replica).Scan(&held))
	require.Equal(t, 1, held, "the replica is registered")
	return func() { require.NoError(t, tx.Rollback(ctx)) }
}

// waitSwept waits until a sweep has taken the hub's registration away.
func (r presenceRecord) waitSwept(t *testing.T, h *Hub) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, r.pg.QueryRow(context.Background(), `SELECT count(*) FROM presence_replicas WHERE id = $1`,
			h.presence.replica).Scan(&n))
		return n == 0
	}, 10*time.Second, 5*time.Millisecond, "the dead replica was not swept")
}

// TestPresenceAcrossReplicas: a person is online while one of their sockets is open on any
// replica; the first socket anywhere and the last one everywhere are announced, once, to the
// sockets that asked, with rising versions; a replica that dies stops counting within its
// registration's lifetime and a sweep.
func TestPresenceAcrossReplicas(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, presenceConfig)
	other, otherHub, stopOther := startReplica(t, e)
	pg := newPresenceRecord(t, e)
	w := e.watch(t, e.owner)
	v0 := nextPresence(t, w, e.owner.ID, true).Version

	member := e.session(t, e.member)
	onOther, status := realtimetest.DialSocket(t, other, realtimetest.Dial{Token: member, Path: "/ws?after_cursor=1"})
	require.Equal(t, 101, status)
	v1 := nextPresence(t, w, e.member.ID, true).Version
	require.Greater(t, v1, v0)
	require.ElementsMatch(t, []string{e.owner.ID, e.member.ID}, e.online(t))

	// A second socket on another replica, then the first one closing, changes nothing; the
	// last one closing is the one change. (Each close waits for the replicas' record of what
	// came before it: a socket opened less than a flush before another replica's last one
	// closes may be counted after it, and the person flickers off and on.)
	here := e.dial(t, member, "1")
	pg.waitCounting(t, e.member.ID, 2)
	_ = onOther.Close()
	pg.waitCounting(t, e.member.ID, 1)
	_ = here.Close()
	v2 := nextPresence(t, w, e.member.ID, false).Version
	require.Greater(t, v2, v1)
	require.Equal(t, []string{e.owner.ID}, e.online(t))

	// The other replica dies holding the member's socket: they go offline by the sweep.
	_, status = realtimetest.DialSocket(t, other, realtimetest.Dial{Token: member, Path: "/ws?after_cursor=1"})
	require.Equal(t, 101, status)
	nextPresence(t, w, e.member.ID, true)
	release := pg.hold(t, otherHub) // stopping may outlast the registration on a loaded machine
	stopOther()
	require.ElementsMatch(t, []string{e.owner.ID, e.member.ID}, e.online(t), "counted until swept")
	release()
	start := time.Now()
	nextPresence(t, w, e.member.ID, false)
	require.Less(t, time.Since(start), 3*presenceTTL, "swept within the lifetime and a third")
	require.Equal(t, []string{e.owner.ID}, e.online(t))
}

// TestPresenceRestartIsQuiet: a replica restarting while its clients reconnect elsewhere
// announces nobody: its rows stay until swept, and by then the people are counted on another
// replica; nor does a socket without ?presence=1 receive presence events.
func TestPresenceRestartIsQuiet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, presenceConfig)
	other, otherHub, stop := startReplica(t, e)
	pg := newPresenceRecord(t, e)
	w := e.watch(t, e.owner)
	nextPresence(t, w, e.owner.ID, true)
	member := e.session(t, e.member)
	plain := e.dial(t, e.session(t, e.owner), "1")
	s, status := realtimetest.DialSocket(t, other, realtimetest.Dial{Token: member, Path: "/ws?after_cursor=1"})
	require.Equal(t, 101, status)
	nextPresence(t, w, e.member.ID, true)
	// The reconnect is counted before the dead replica is swept, as with a production
	// lifetime (30 s); the test's second must not decide it on a loaded machine.
	release := pg.hold(t, otherHub)
	stop()
	require.Equal(t, 1001, int(s.ExpectClose(t)))
	e.dial(t, member, "1")
	pg.waitCounting(t, e.member.ID, 2)
	release()
	pg.waitSwept(t, otherHub)
	require.Equal(t, 1, pg.counting(t, e.member.ID), "the reconnect counts")
	cursor := e.add(t, "after the restart")
	ev := w.Next(t)
	require.Equal(t, strconv.FormatInt(cursor, 10), ev.Cursor, "no presence change came before: %s %s", ev.Type, ev.Payload)
	require.Equal(t, strconv.FormatInt(cursor, 10), plain.Next(t).Cursor, "a socket that did not ask sees no presence")
	require.ElementsMatch(t, []string{e.owner.ID, e.member.ID}, e.online(t))
}

// TestPresenceLeaveDuringFlush: a person's last socket closing while the flush that writes
// them online is in flight is written by the next flush: they go offline, rather than stay
// online on this replica for as long as it runs.
func TestPresenceLeaveDuringFlush(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	p := newPresence(Config{Store: e.store, NATS: e.nc, Logger: slog.New(slog.DiscardHandler),
		PresenceTTL: time.Minute, PresenceFlush: time.Hour})
	ctx := context.Background()
	require.True(t, p.flush(ctx, true), "the registration is written")

	// Another transaction holds the registration's row, so the next flush waits on it after
	// taking the person, until the socket has closed.
	conn, err := pgx.Connect(ctx, persisttest.StoreURL(t, e.store))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT 1 FROM presence_replicas WHERE id = $1 FOR UPDATE`, p.replica)
	require.NoError(t, err)
	k := persist.PresenceKey{WorkspaceID: e.ws.ID, UserID: e.member.ID}
	p.join(k)
	flushed := make(chan bool, 1)
	go func() { flushed <- p.flush(ctx, false) }()
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.dirty) == 0
	}, 10*time.Second, time.Millisecond, "the flush took the person")
	p.leave(k)
	require.NoError(t, tx.Rollback(ctx))
	require.True(t, <-flushed)
	require.Equal(t, []string{e.member.ID}, e.online(t), "written online by the flush in flight")

	p.flush(ctx, false)
	require.Equal(t, []string{}, e.online(t), "the close during the write is written next")
	require.Equal(t, 2, counted(p.changes), "online, then offline")
}

// nextPresenceChanges reads the socket's next event as a presence.changed of several people.
func nextPresenceChanges(t *testing.T, s *realtimetest.Socket) []presenceEvent {
	t.Helper()
	ev := s.Next(t)
	require.Equal(t, "presence.changed", ev.Type, "payload %s", ev.Payload)
	require.Equal(t, "", ev.Cursor)
	require.Equal(t, "", ev.ChannelID+ev.DirectConversationID+ev.ActorID, "workspace-wide, of no one person")
	var p struct {
		Changes []presenceEvent `json:"changes"`
	}
	require.NoError(t, json.Unmarshal(ev.Payload, &p))
	return p.Changes
}

// TestPresenceStormIsAFewEvents: the people whose standing one flush changes reach a socket that
// asked for presence as one event, {changes: [...]}, at most 256 to an event, where each was an
// event of its own (a sign-in storm of N people was N² frames). One person's change alone keeps
// its own shape.
func TestPresenceStormIsAFewEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, func(c *Config) { c.PresenceTTL, c.PresenceFlush = presenceTTL, time.Hour }) // the test flushes
	p := e.hubs[0].presence
	ctx := context.Background()
	flushWhen := func(what string, ready func() bool) {
		t.Helper()
		require.Eventually(t, func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return ready()
		}, 5*time.Second, 5*time.Millisecond, what) // the maps are read only under p.mu
		require.True(t, p.flush(ctx, true))
	}
	w := e.watch(t, e.owner)
	flushWhen("the watcher joined", func() bool { return len(p.held) == 1 })
	v0 := nextPresence(t, w, e.owner.ID, true).Version

	people := map[string]*realtimetest.Socket{e.member.ID: e.dial(t, e.session(t, e.member), "1")}
	for range 5 {
		u := persisttest.User(t, e.store, nil)
		persisttest.Member(t, e.store, e.ws.ID, u.ID, persist.RoleMember)
		people[u.ID] = e.dial(t, e.session(t, u), "1")
	}
	flushWhen("six people joined", func() bool { return len(p.held) == 7 })
	online := nextPresenceChanges(t, w)
	require.Len(t, online, 6)
	last := v0
	for _, c := range online {
		require.Contains(t, people, c.UserID)
		require.Equal(t, presenceEvent{UserID: c.UserID, Online: true, Status: "online", Version: c.Version}, c)
		require.Greater(t, c.Version, v0)
		last = max(last, c.Version)
	}
	for _, s := range people {
		_ = s.Close()
	}
	flushWhen("six people left", func() bool { return len(p.held) == 1 })
	offline := nextPresenceChanges(t, w)
	require.Len(t, offline, 6)
	for _, c := range offline {
		require.Contains(t, people, c.UserID)
		require.Equal(t, presenceEvent{UserID: c.UserID, Online: false, Status: "offline", Version: c.Version}, c)
		require.Greater(t, c.Version, last)
	}

	// 300 changes of the workspace are two events of 256 and 44, in order; another
	// workspace's change reaches none of this workspace's sockets.
	var storm []persist.PresenceChange
	for i := range 300 {
		storm = append(storm, persist.PresenceChange{PresenceKey: persist.PresenceKey{WorkspaceID: e.ws.ID,
			UserID: "usr_storm" + strconv.Itoa(i)}, Online: true, Version: int64(1000 + i)})
	}
	p.publish(append(storm, persist.PresenceChange{PresenceKey: persist.PresenceKey{WorkspaceID: "wsp_other",
		UserID: "usr_elsewhere"}, Online: true, Version: 5000}))
	first, second := nextPresenceChanges(t, w), nextPresenceChanges(t, w)
	require.Len(t, first, 256)
	require.Len(t, second, 44)
	for i, c := range append(first, second...) {
		require.Equal(t, presenceEvent{UserID: "usr_storm" + strconv.Itoa(i), Online: true, Status: "online", Version: int64(1000 + i)}, c)
	}
	cursor := e.add(t, "after the storm")
	require.Equal(t, strconv.FormatInt(cursor, 10), w.Next(t).Cursor, "nothing of the other workspace")
}
