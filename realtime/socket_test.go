package realtime

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/realtimetest"
)

func cursors(t *testing.T, s *realtimetest.Socket, n int) []string {
	t.Helper()
	out := make([]string, 0, n)
	for len(out) < n {
		out = append(out, s.Next(t).Cursor)
	}
	return out
}

func span(from, to int) []string {
	out := []string{}
	for i := from; i <= to; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

// TestHandOff appends events while sockets connect from several cursors: each receives every
// later event exactly once, in order, whether it came from the backfill or live; a small queue
// makes the backfill come in several pages.
func TestHandOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, func(c *Config) { c.QueueBytes = 8 << 10 })
	token := e.session(t, e.owner)
	for i := 0; i < 20; i++ {
		e.add(t, strings.Repeat("b", 200)) // 2-21
	}
	const total = 120
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 21; i < total; i++ {
			e.add(t, "live")
		}
	}()
	for _, after := range []string{"", "5", "21"} {
		s := e.dial(t, token, after)
		from := 1
		if after != "" {
			from, _ = strconv.Atoi(after)
			from++
		}
		require.Equal(t, span(from, total), cursors(t, s, total-from+1), "after %q", after)
	}
	wg.Wait()
	s := e.dial(t, token, strconv.Itoa(total))
	e.add(t, "at the head")
	require.Equal(t, strconv.Itoa(total+1), s.Next(t).Cursor, "a socket at the head goes live")
}

// TestTooSlow stops reading while events pile up: the queue's byte bound is reached and the
// socket is closed with 1013; a reconnect from the last cursor read gets the rest exactly once.
func TestTooSlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, func(c *Config) { c.QueueBytes = 32 << 10; c.SendBuffer = 4096 })
	token := e.session(t, e.owner)
	s := e.dialOn(t, 0, realtimetest.Dial{Token: token, RecvBuffer: 4096}, "1")
	e.add(t, "first")
	require.Equal(t, "2", s.Next(t).Cursor)
	// Live, what follows goes through the queue; a socket still catching up would hold it as
	// pending, drop it past half the queue and read it again page by page, cut off by nothing.
	socketsLive(t, e.hubs[0])
	const n = 100
	for i := 0; i < n; i++ {
		e.add(t, strings.Repeat("x", 8<<10))
	}
	// Nothing is read until the feed has dispatched every event: 800 KiB, far past the queue
	// and the kernel's buffers. (Read while the relay still trickles them in, they could all
	// fit.) And the reconnect below then starts once the feed has every event: a relay backlog
	// arriving live would be a burst this test's 32 KiB queue cannot hold, whatever the
	// catch-up does.
	require.Eventually(t, func() bool { return feedLast(e.hubs[0], e.ws.ID) == int64(n+2) }, 20*time.Second, 10*time.Millisecond)
	last, code := 2, ws.StatusCode(0)
	for {
		f, ok := s.ReadFrame(t)
		if !ok {
			break
		}
		if f.Header.OpCode == ws.OpClose {
			code, _ = ws.ParseCloseFrameData(f.Payload)
			break
		}
		if f.Header.OpCode == ws.OpText {
			last++
		}
	}
	require.Less(t, last, n+2, "the slow socket was cut off")
	if code != 0 {
		require.Equal(t, ws.StatusCode(1013), code)
	}
	require.Equal(t, 1, closes(e.hubs[0], 1013))
	again := e.dial(t, token, strconv.Itoa(last))
	require.Equal(t, span(last+1, n+2), cursors(t, again, n+2-last))
}

// TestDroppedPeerIsReset: a peer too slow even for its close frame is dropped once the close's
// grace is over, with a reset: reading again, however long it stalled, it learns at once that
// the connection is gone, instead of waiting on the kernel to push the rest into its window.
func TestDroppedPeerIsReset(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, func(c *Config) { c.QueueBytes = 32 << 10; c.SendBuffer = 4096 })
	token := e.session(t, e.owner)
	s := e.dialOn(t, 0, realtimetest.Dial{Token: token, RecvBuffer: 4096}, "1")
	e.add(t, "first")
	require.Equal(t, "2", s.Next(t).Cursor)
	socketsLive(t, e.hubs[0])
	for i := 0; i < 40; i++ { // 320 KiB, read by nobody
		e.add(t, strings.Repeat("x", 8<<10))
	}
	h := e.hubs[0]
	require.Eventually(t, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.sockets) == 0
	}, 20*time.Second, 10*time.Millisecond, "the slow socket was not dropped")
	require.Equal(t, 1, closes(h, 1013))
	require.ErrorIs(t, s.End(t), syscall.ECONNRESET)
}

// TestPrunedCursor: a cursor older than the retained window, or never issued, closes with 4001.
func TestPrunedCursor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	token := e.session(t, e.owner)
	for i := 0; i < 5; i++ {
		e.add(t, "old") // 2-6
	}
	ctx := context.Background()
	_, err := persist.WithTxV(ctx, e.store, func(tx *persist.Tx) (persist.EventPruneResult, error) {
		return tx.EventPrune(ctx, e.ws.ID, persist.EventPruneParams{KeepLatest: persisttest.Ptr(int64(2))})
	})
	require.NoError(t, err)
	for _, after := range []string{"1", "99", "not-a-cursor"} {
		require.Equal(t, ws.StatusCode(4001), e.dial(t, token, after).ExpectClose(t), "after %q", after)
	}
	require.Equal(t, []string{"5", "6"}, cursors(t, e.dial(t, token, "4"), 2), "the retained window still serves")
}

// TestRevocation logs the socket's session out; no periodic check would notice within the test,
// so it is the announcement that closes the socket with 1008.
func TestRevocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, func(c *Config) { c.RevalidateInterval = time.Hour })
	token := e.session(t, e.owner)
	s := e.dial(t, token, "1")
	ctx := context.Background()
	require.NoError(t, e.store.WithTx(ctx, func(tx *persist.Tx) error { return tx.SessionRevoke(ctx, token) }))
	require.Equal(t, ws.StatusCode(1008), s.ExpectClose(t))
}

// TestWorkspaceDeletedOnEveryReplica deletes the workspace while two replicas hold sockets of
// it: the deletion is announced like a revocation, so each replica closes its sockets with 1008
// at once, though no periodic check is due for an hour.
func TestWorkspaceDeletedOnEveryReplica(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, func(c *Config) { c.RevalidateInterval = time.Hour })
	owner, member := e.session(t, e.owner), e.session(t, e.member)
	sockets := []*realtimetest.Socket{
		e.dialOn(t, 0, realtimetest.Dial{Token: owner}, "1"), e.dialOn(t, 1, realtimetest.Dial{Token: owner}, "1"),
		e.dialOn(t, 0, realtimetest.Dial{Token: member}, "1"), e.dialOn(t, 1, realtimetest.Dial{Token: member}, "1"),
	}
	// Another workspace's socket stays open.
	other := persisttest.Workspace(t, e.store, e.member.ID)
	e.mu.Lock()
	j := e.joins[member]
	j.WorkspaceID = other.ID
	e.joins["other"] = j
	e.mu.Unlock()
	bystander := e.dial(t, "other", "")
	ctx := context.Background()
	require.NoError(t, e.store.WithTx(ctx, func(tx *persist.Tx) error {
		return tx.WorkspaceDelete(ctx, persist.ActorFor(e.owner), e.ws.ID)
	}))
	for i, s := range sockets {
		require.Equal(t, ws.StatusCode(1008), s.ExpectClose(t), "socket %d", i)
	}
	bystander.Send(t, ws.NewPingFrame([]byte("still here")))
	for {
		f, ok := bystander.ReadFrame(t)
		require.True(t, ok)
		if f.Header.OpCode == ws.OpPong {
			require.Equal(t, "still here", string(f.Payload))
			break
		}
	}
}

// TestDeferredClose revokes the session while a worker is writing a long backfill to a reader
// that takes it slowly: the close, decided mid-write, follows the frame on the wire, so the client
// reads whole events and then the close.
func TestDeferredClose(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, func(c *Config) { c.SendBuffer = 4096; c.RevalidateInterval = time.Hour })
	token := e.session(t, e.owner)
	for i := 0; i < 300; i++ {
		e.add(t, strings.Repeat("d", 1000))
	}
	s := e.dialOn(t, 0, realtimetest.Dial{Token: token, RecvBuffer: 4096}, "")
	require.Equal(t, "1", s.Next(t).Cursor)
	ctx := context.Background()
	require.NoError(t, e.store.WithTx(ctx, func(tx *persist.Tx) error { return tx.SessionRevoke(ctx, token) }))
	for {
		f, ok := s.ReadFrame(t)
		require.True(t, ok, "the connection ended without a close frame")
		if f.Header.OpCode == ws.OpClose {
			code, _ := ws.ParseCloseFrameData(f.Payload)
			require.Equal(t, ws.StatusCode(1008), code)
			return
		}
		if f.Header.OpCode == ws.OpText {
			var ev realtimetest.SocketEvent
			require.NoError(t, json.Unmarshal(f.Payload, &ev), "a whole event frame")
		}
	}
}

// TestDeferredCloseKeepsTheFrameOnTheWire is the same rule from inside: a close decided while a
// worker is running waits for its flush, then replaces what is queued but keeps the frame
// partly written.
func TestDeferredCloseKeepsTheFrameOnTheWire(t *testing.T) {
	t.Parallel()
	h := &Hub{cfg: Config{QueueBytes: 1 << 20}, queue: make(chan *socket, 1)}
	h.metrics.closes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "closes"}, []string{"code"})
	s := &socket{hub: h, state: stateLive}
	first, second := textFrame([]byte(`{"a":1}`)), textFrame([]byte(`{"b":2}`))
	s.mu.Lock()
	s.out, s.outOff, s.outBytes, s.running = [][]byte{first, second}, 3, len(first)-3+len(second), true
	s.closeLocked(CloseRevoked, "credentials revoked", true)
	require.Equal(t, [][]byte{first, second}, s.out, "the worker's queue is left alone while it writes")
	require.NotNil(t, s.deferredClose)
	s.queueCloseLocked(s.deferredClose)
	require.Equal(t, [][]byte{first, closeFrame(1008, "credentials revoked")}, s.out)
	require.Equal(t, len(first)-3+len(s.out[1]), s.outBytes)
	s.mu.Unlock()
}

// TestSocketCapPerAccount opens 64 sockets as one person and as one bot token: the 65th is
// refused before the upgrade with 429 and the error body, while another person and the bot's
// other token still connect; a closed socket frees its place.
func TestSocketCapPerAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	owner, member := e.session(t, e.owner), e.session(t, e.member)
	bot, tokA := persisttest.Bot(t, e.store, e.owner, e.ws.ID, nil)
	tokB := persisttest.BotToken(t, e.store, e.owner, e.ws.ID, bot.ID)
	botA, botB := e.bot(t, bot, tokA), e.bot(t, bot, tokB)
	var open []*realtimetest.Socket
	for _, token := range []string{owner, botA} {
		for i := 0; i < 64; i++ {
			open = append(open, e.dial(t, token, "1"))
		}
		_, status := realtimetest.DialSocket(t, e.urls[0], realtimetest.Dial{Token: token, Path: "/ws"})
		require.Equal(t, http.StatusTooManyRequests, status)
		body := upgradeRefusal(t, e.urls[0], token)
		require.Equal(t, "rate_limited", body.Code)
		require.Contains(t, body.Error, "64")
	}
	e.dial(t, member, "1")
	e.dial(t, botB, "1")
	open[0].Send(t, ws.NewCloseFrame(ws.NewCloseFrameBody(1000, "")))
	require.Equal(t, ws.StatusCode(1000), open[0].ExpectClose(t))
	require.Eventually(t, func() bool {
		_, status := realtimetest.DialSocket(t, e.urls[0], realtimetest.Dial{Token: owner, Path: "/ws?after_cursor=1"})
		return status == http.StatusSwitchingProtocols
	}, 10*time.Second, 10*time.Millisecond, "a closed socket frees its place")
}

type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// upgradeRefusal sends a WebSocket handshake with plain HTTP and decodes the refusal's body.
func upgradeRefusal(t *testing.T, url, token string) errorBody {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/ws", nil)
	require.NoError(t, err)
	for k, v := range map[string]string{"Authorization": "Bearer " + token, "Connection": "Upgrade", "Upgrade": "websocket",
		"Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	var b errorBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
	return b
}
