package realtime

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gobwas/ws"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/realtime/realtimetest"
)

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// queued reads a socket's queue: bytes waiting to be written, the pending pong included.
func queued(s *socket) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outBytes + len(s.pong)
}

// flood sends frame from a client that never reads until the server drops the connection or
// count frames went out; every 64 frames it checks the socket's queue against its bound. It
// returns how many frames were written.
func flood(t *testing.T, e *env, c *realtimetest.Socket, frame []byte, count int) int {
	t.Helper()
	limit := e.hubs[0].cfg.QueueBytes
	sent := 0
	for ; sent < count; sent++ {
		if c.Write(frame) != nil {
			break
		}
		if sent%64 == 0 {
			e.hubs[0].mu.Lock()
			var sockets []*socket
			for s := range e.hubs[0].sockets {
				sockets = append(sockets, s)
			}
			e.hubs[0].mu.Unlock()
			for _, s := range sockets {
				require.LessOrEqual(t, queued(s), limit, "after %d pings", sent)
			}
		}
	}
	return sent
}

func gone(t *testing.T, h *Hub) {
	t.Helper()
	require.Eventually(t, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.sockets) == 0
	}, 30e9, 10e6, "the flooding socket was not dropped")
}

// TestPingFlood is defect 1 of issue 10: one socket sends masked pings in a loop and never
// reads. Pings over 125 bytes break RFC 6455 and close the socket with 1002 at the first one;
// valid pings get one coalesced pong at a time, and once the pongs owed fill half the queue the
// socket is closed with 1008. Either way the queue stays within its bound and the heap does not
// grow with the flood. Not parallel: the heap is measured.
func TestPingFlood(t *testing.T) {
	t.Run("4000BytePings", func(t *testing.T) {
		e := newEnv(t, 1, func(c *Config) { c.SendBuffer = 4096 })
		token := e.session(t, e.owner)
		before := heapInUse()
		c := e.dialOn(t, 0, realtimetest.Dial{Token: token, RecvBuffer: 4096}, "1")
		sent := flood(t, e, c, rawFrame(fin|opPing, make([]byte, 4000), false), 5000)
		t.Logf("%d pings written before the server dropped the connection", sent)
		gone(t, e.hubs[0])
		require.Equal(t, 1, closes(e.hubs[0], 1002))
		require.Less(t, sent, 5000, "the server dropped the connection")
		after := heapInUse()
		require.Less(t, int64(after)-int64(before), int64(50<<20), "heap %d -> %d bytes", before, after)
	})
	t.Run("125BytePings", func(t *testing.T) {
		e := newEnv(t, 1, func(c *Config) { c.SendBuffer = 4096; c.QueueBytes = 64 << 10 })
		token := e.session(t, e.owner)
		before := heapInUse()
		c := e.dialOn(t, 0, realtimetest.Dial{Token: token, RecvBuffer: 4096}, "1")
		sent := flood(t, e, c, rawFrame(fin|opPing, make([]byte, 125), false), 200000)
		t.Logf("%d pings written before the server dropped the connection", sent)
		gone(t, e.hubs[0])
		require.Equal(t, 1, closes(e.hubs[0], 1008))
		require.Less(t, sent, 200000, "the server dropped the connection")
		after := heapInUse()
		require.Less(t, int64(after)-int64(before), int64(50<<20), "heap %d -> %d bytes", before, after)
	})
}

// TestPongsCoalesce sends 2,000 numbered pings without reading, then reads: pings answered while
// the previous pong could not be written were coalesced into one pending pong (RFC 6455
// §5.5.3), so fewer pongs arrive, in order, the last one answering the last ping, and the socket
// stays open.
func TestPongsCoalesce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, func(c *Config) { c.SendBuffer = 4096 })
	token := e.session(t, e.owner)
	c := e.dialOn(t, 0, realtimetest.Dial{Token: token, RecvBuffer: 4096}, "1")
	const n = 2000
	payload := func(i int) []byte { return []byte(fmt.Sprintf("%04d%s", i, strings.Repeat(".", 121))) }
	for i := 0; i < n; i++ {
		c.SendRaw(t, rawFrame(fin|opPing, payload(i), false))
	}
	pongs, last := 0, -1
	for last < n-1 {
		f, ok := c.ReadFrame(t)
		require.True(t, ok)
		require.NotEqual(t, ws.OpClose, f.Header.OpCode)
		if f.Header.OpCode != ws.OpPong {
			continue
		}
		i, err := strconv.Atoi(string(f.Payload[:4]))
		require.NoError(t, err)
		require.Greater(t, i, last, "pongs answer pings in order")
		pongs, last = pongs+1, i
	}
	require.Less(t, pongs, n, "pings were coalesced")
	t.Logf("%d pings, %d pongs", n, pongs)
}
