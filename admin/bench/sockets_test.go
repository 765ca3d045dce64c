package bench

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/stretchr/testify/require"
)

// TestTallyMerge: the figures of sockets spread over load generators are those of one set
// holding them all: counts add up, the latency quantiles are those of every delivery together,
// the drain took as long as the slowest generator and ended in time only if every one did.
func TestTallyMerge(t *testing.T) {
	t.Parallel()
	var a, b tally
	a.Sockets, a.Lost, a.Dups, a.Closed, a.Ended, a.Answered, a.Lag = 3, 1, 0, 1, 1, 1, 3*time.Second
	b.Sockets, b.Lost, b.Dups, b.Closed, b.Ended, b.Answered, b.Lag = 2, 0, 2, 0, 2, 1, time.Second
	for range 98 {
		a.Latency.add(10 * time.Millisecond)
	}
	b.Latency.add(900 * time.Millisecond)
	b.Latency.add(900 * time.Millisecond)

	// Through JSON, as a generator's answer travels.
	raw, err := json.Marshal(b)
	require.NoError(t, err)
	var got tally
	require.NoError(t, json.Unmarshal(raw, &got))

	var all tally
	all.merge(a)
	all.merge(got)
	require.Equal(t, 5, all.Sockets)
	require.Equal(t, 1, all.Lost)
	require.Equal(t, 2, all.Dups)
	require.Equal(t, 1, all.Closed)
	require.Equal(t, 3, all.Ended)
	require.Equal(t, 2, all.Answered)
	require.Equal(t, 3*time.Second, all.Lag, "the worst generator's lag")
	require.EqualValues(t, 100, all.Latency.n)
	require.InDelta(t, 10*time.Millisecond, all.Latency.quantile(0.5), float64(time.Millisecond)/5)
	require.InDelta(t, 10*time.Millisecond, all.Latency.quantile(0.98), float64(time.Millisecond)/5)
	require.InDelta(t, 900*time.Millisecond, all.Latency.quantile(0.99), float64(10*time.Millisecond))

	c := caught{OK: true}
	c.merge(caught{Took: 2 * time.Second, OK: true})
	c.merge(caught{Took: time.Second, OK: false})
	require.Equal(t, caught{Took: 2 * time.Second, OK: false}, c)

	var h histogram
	require.Error(t, json.Unmarshal([]byte(`[[5000,1]]`), &h), "a bucket past the end is refused")
}

// TestLocalSetAccount: a delivery is lost when a connected socket lacks an acknowledged post,
// duplicated when it got one twice; a socket the server refused counts for neither.
func TestLocalSetAccount(t *testing.T) {
	t.Parallel()
	l := newLocalSet(0, 3, 2, nil, false)
	frame := func(n int64) []byte {
		return []byte(`{"cursor":"c` + string(rune('0'+n)) + `","payload":{"body":"` + benchBody(n) + `"}}`)
	}
	l.sockets[0].onEvent(frame(1), time.Now())
	l.sockets[0].onEvent(frame(2), time.Now())
	l.sockets[1].onEvent(frame(1), time.Now())
	l.sockets[1].onEvent(frame(1), time.Now())
	l.sockets[2].refused = true
	got, err := l.account(t.Context(), []int64{1, 2})
	require.NoError(t, err)
	require.Equal(t, 2, got.Sockets)
	require.Equal(t, 1, got.Lost, "socket 1 never got post 2")
	require.Equal(t, 1, got.Dups)
	require.EqualValues(t, 3, got.Latency.n)
	require.Equal(t, "c2", l.sockets[0].cursor)

	again, err := l.account(t.Context(), nil)
	require.NoError(t, err)
	require.Zero(t, again.Dups, "each account counts what came since the last")
	require.Zero(t, again.Latency.n)
}

// TestRemoteSetMerges: the coordinator's requests reach every load generator, each holds its
// own share of the sockets (with its own sessions), and the answers are merged.
func TestRemoteSetMerges(t *testing.T) {
	t.Parallel()
	tokens := []string{"t0", "t1", "t2", "t3", "t4"}
	rs, err := startGenerators(t.Context(), spawnInProcess, 2, 5, 8, tokens)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rs.stop()) })
	require.Equal(t, 5, rs.size())
	require.Len(t, rs.gens, 2)

	// Nothing connected: every socket lacks both posts.
	got, err := rs.account(t.Context(), []int64{1, 2})
	require.NoError(t, err)
	require.Equal(t, 5, got.Sockets)
	require.Equal(t, 10, got.Lost)
	n, err := rs.frames(t.Context())
	require.NoError(t, err)
	require.Zero(t, n)
	c, err := rs.caughtUp(t.Context(), []int64{1}, 10*time.Millisecond)
	require.NoError(t, err)
	require.False(t, c.OK, "no socket has post 1")

	// A connect nobody answers fails with the generator's error, and says which socket.
	_, err = rs.connect(t.Context(), dialSpec{URLs: []string{"ws://127.0.0.1:1/ws"}, Dialers: 2})
	require.ErrorContains(t, err, "load generator")
	require.ErrorContains(t, err, "socket ")
}

// TestEndedSocketsToldApart: of the connections a server ends without a close frame, those that
// had answered its ping are counted apart (a server dropping live sockets), and the load
// generator reports how late it ran (one too far behind to answer in time).
func TestEndedSocketsToldApart(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, _, err := ws.UpgradeHTTP(r, w)
		if err != nil {
			return
		}
		defer conn.Close()
		if r.URL.Query().Get("ping") == "1" {
			_ = ws.WriteFrame(conn, ws.NewPingFrame([]byte("p")))
			if h, err := ws.ReadHeader(conn); err != nil || h.OpCode != ws.OpPong {
				return
			}
		}
		// Dropped without a close frame, as a server reaping a socket does.
	}))
	t.Cleanup(srv.Close)
	l := newLocalSet(0, 2, 1, nil, false)
	base := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	// Socket 0 dials the first URL (pinged, answers, dropped), socket 1 the second (dropped).
	res, err := l.connect(t.Context(), dialSpec{URLs: []string{base + "?ping=1", base + "?ping=0"}, Dialers: 2})
	require.NoError(t, err)
	require.Equal(t, 2, res.Connected)
	for _, s := range l.sockets {
		<-s.closed
	}
	got, err := l.account(t.Context(), nil)
	require.NoError(t, err)
	require.Equal(t, 2, got.Ended)
	require.Equal(t, 1, got.Answered, "only the pinged socket had answered before it was dropped")
	require.GreaterOrEqual(t, got.Lag, time.Duration(0))
	require.NoError(t, l.closeAll(t.Context()))
}
