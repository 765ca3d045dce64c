package realtime

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/realtimetest"
)

func checkCount(h *Hub, kind string) int {
	return counted(h.metrics.checks.WithLabelValues(kind))
}

func reapedCount(h *Hub) int {
	return counted(h.metrics.reaped)
}

// members makes n people members of the workspace, each signed in with a session of their own.
func (e *env) members(t *testing.T, n int) ([]persist.User, []string) {
	t.Helper()
	var users []persist.User
	var tokens []string
	for range n {
		u := persisttest.User(t, e.store, nil)
		persisttest.Member(t, e.store, e.ws.ID, u.ID, persist.RoleMember)
		users, tokens = append(users, u), append(tokens, e.session(t, u))
	}
	return users, tokens
}

// TestSocketsRevalidatedInBulk: with every announcement lost, the periodic check still finds what
// ended — a session signed out, a member made a guest, a member removed — and it checks the
// sockets of four people, each with a session of their own, in one statement: the signed out
// and the removed are closed with 1008, the guest no longer sees #general, the fourth is
// untouched.
func TestSocketsRevalidatedInBulk(t *testing.T) {
	t.Parallel()
	e := newQuietEnv(t, func(c *Config) { c.RevalidateInterval, c.SweepInterval = time.Hour, time.Hour })
	h := e.hubs[0]
	users, tokens := e.members(t, 4)
	from := strconv.FormatInt(e.add(t, "before"), 10)
	var sockets []*realtimetest.Socket
	for _, tok := range tokens {
		sockets = append(sockets, e.dial(t, tok, from))
	}
	ctx := context.Background()
	require.NoError(t, e.store.WithTx(ctx, func(tx *persist.Tx) error { return tx.SessionRevoke(ctx, tokens[0]) }))
	require.NoError(t, e.store.WithTx(ctx, func(tx *persist.Tx) error {
		_, _, err := tx.MemberSetRoleByOperator(ctx, e.ws.ID, users[1].ID, persist.RoleGuest)
		return err
	}))
	require.NoError(t, e.store.WithTx(ctx, func(tx *persist.Tx) error {
		_, _, err := tx.MemberRemoveByOperator(ctx, e.ws.ID, users[2].ID)
		return err
	}))

	// The idle timer's visit once every check is a revalidation interval old, after the
	// events above were fanned out (a delivery to a stale socket would check it alone).
	marker := e.add(t, "marker")
	require.Eventually(t, func() bool { return feedLast(h, e.ws.ID) >= marker }, 10*time.Second, 5*time.Millisecond)
	for _, s := range []*realtimetest.Socket{sockets[1], sockets[3]} {
		for s.Next(t).Cursor != strconv.FormatInt(marker, 10) { // the membership changes' events, read as a member
		}
	}
	h.mu.Lock()
	for s := range h.sockets {
		s.mu.Lock()
		s.checkedAt = time.Now().Add(-time.Hour)
		s.mu.Unlock()
	}
	h.mu.Unlock()
	due := h.sweep(time.Now(), true)
	require.Len(t, due, 4, "every person's socket is due")
	h.revalidateBulk(ctx, due)
	require.Equal(t, 1, checkCount(h, "bulk"), "four people's standings in one statement")
	require.Equal(t, 0, checkCount(h, "single"), "no socket checked alone")

	require.EqualValues(t, 1008, sockets[0].ExpectClose(t), "the session signed out")
	require.EqualValues(t, 1008, sockets[2].ExpectClose(t), "the member removed")
	cursor := e.add(t, "after")
	expectCursors(t, sockets[3], cursor)
	require.Eventually(t, func() bool { return feedLast(h, e.ws.ID) >= cursor }, 10*time.Second, 5*time.Millisecond)
	// The guest's socket had #general's event fanned out to it (or not) before feedLast saw it;
	// a pong asked for now comes after anything queued before it.
	sockets[1].Send(t, ws.NewPingFrame([]byte("after")))
	f, ok := sockets[1].ReadFrame(t)
	require.True(t, ok)
	require.Equal(t, ws.OpPong, f.Header.OpCode, "a guest sees nothing of #general: %s", f.Payload)
}

// TestSocketClosedByBulkCheckOnTheIdleTimer: a session signed out with no announcement ends its
// idle socket within the revalidation interval, through the idle timer's bulk check, without a
// check of that socket alone.
func TestSocketClosedByBulkCheckOnTheIdleTimer(t *testing.T) {
	t.Parallel()
	e := newQuietEnv(t, func(c *Config) {
		c.RevalidateInterval, c.SweepInterval = 300*time.Millisecond, 20*time.Millisecond
	})
	_, tokens := e.members(t, 1)
	s := e.dial(t, tokens[0], "1")
	ctx := context.Background()
	require.NoError(t, e.store.WithTx(ctx, func(tx *persist.Tx) error { return tx.SessionRevoke(ctx, tokens[0]) }))
	require.EqualValues(t, 1008, s.ExpectClose(t), "SPEC §Errors: WebSocket close 1008")
	require.GreaterOrEqual(t, checkCount(e.hubs[0], "bulk"), 1)
	require.Equal(t, 0, checkCount(e.hubs[0], "single"))
}

// TestSocketNotReapedWhileWorkersLag: while every worker is held up (here on a check that waits
// for a table lock), for four ping intervals, no live client is taken for half-open — neither one
// that keeps sending (its bytes wait to be read), nor one that only answers the server's pings,
// which the workers write late: its silence counts from the ping's write, not its queueing. Once
// the workers are back both sockets deliver.
func TestSocketNotReapedWhileWorkersLag(t *testing.T) {
	t.Parallel()
	for _, clientPings := range []bool{true, false} {
		t.Run(map[bool]string{true: "ClientSends", false: "ClientAnswersLatePings"}[clientPings], func(t *testing.T) {
			t.Parallel()
			notReapedWhileWorkersLag(t, clientPings)
		})
	}
}

func notReapedWhileWorkersLag(t *testing.T, clientPings bool) {
	e := newEnv(t, 1, func(c *Config) {
		c.Workers, c.PingInterval, c.SweepInterval = 1, 250*time.Millisecond, 20*time.Millisecond
		c.RevalidateInterval = time.Nanosecond // every delivery checks first: the worker waits on the lock
	})
	h := e.hubs[0]
	_, tokens := e.members(t, 2)
	from := strconv.FormatInt(e.add(t, "before"), 10)
	blocker, victim := e.dial(t, tokens[0], from), e.dial(t, tokens[1], from)

	// With clientPings, both clients send a ping every 50 ms and read nothing until the end;
	// otherwise they send nothing and answer the server's pings once they read again.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	ping := ws.MustCompileFrame(ws.MaskFrame(ws.NewPingFrame(nil)))
	for _, s := range []*realtimetest.Socket{blocker, victim} {
		if !clientPings {
			break
		}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
					_ = s.Write(ping)
				}
			}
		})
	}
	ctx := context.Background()
	raw, err := pgx.Connect(ctx, persisttest.StoreURL(t, e.store))
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Close(ctx) })
	tx, err := raw.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	cursor := e.add(t, "during")
	require.Eventually(t, func() bool {
		var waiting int
		err := raw.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		return err == nil && waiting > 0
	}, 10*time.Second, 5*time.Millisecond, "the worker's check waits for the lock")
	time.Sleep(time.Second) // four ping intervals with nothing read or written
	require.NoError(t, tx.Rollback(ctx))
	close(stop)
	wg.Wait()
	expectCursors(t, victim, cursor)
	expectCursors(t, blocker, cursor)
	require.Equal(t, 0, reapedCount(h), "no socket taken for half-open")
}
