package realtime

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/realtimetest"
	"github.com/natterchat/natter/streams"
	"github.com/natterchat/natter/streams/streamstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// pgx pools and the NATS client close their background goroutines asynchronously.
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// env is the socket layer with nothing in front of it: a real store, embedded NATS, the relay,
// and one hub per replica, each behind an HTTP server whose handler turns a bearer token into
// the Join the API server would build (authentication is the server's business, tested there).
// It has a workspace with an owner, a member and #general (cursor 1).
type env struct {
	store   *persist.Store
	nc      *nats.Conn
	hubs    []*Hub
	urls    []string
	owner   persist.User
	member  persist.User
	ws      persist.Workspace
	general string

	mu    sync.Mutex
	joins map[string]Join
}

// newEnv starts replicas hubs (at least one) configured by edit.
func newEnv(t *testing.T, replicas int, edit func(*Config)) *env {
	t.Helper()
	return newEnvWithRelay(t, replicas, edit, nil)
}

// newEnvWithRelay is newEnv with the relay's configuration edited by relayEdit too.
func newEnvWithRelay(t testing.TB, replicas int, edit func(*Config), relayEdit func(*streams.RelayConfig)) *env {
	t.Helper()
	_, nc := streamstest.Embedded(t)
	return newEnvOn(t, nc, replicas, edit, relayEdit)
}

// newQuietEnv is newEnv with revocations never announced to the hubs, as when every
// announcement is lost: only the periodic checks notice them.
func newQuietEnv(t testing.TB, edit func(*Config)) *env {
	t.Helper()
	_, nc := streamstest.Embedded(t)
	return newEnvAnnouncing(t, nc, 1, edit, nil, false)
}

// newEnvOn is newEnvWithRelay on a NATS connection of the caller's (a cluster's).
func newEnvOn(t testing.TB, nc *nats.Conn, replicas int, edit func(*Config), relayEdit func(*streams.RelayConfig)) *env {
	t.Helper()
	return newEnvAnnouncing(t, nc, replicas, edit, relayEdit, true)
}

// newEnvAnnouncing is newEnvOn, with revocations announced to the hubs or (announce false) never.
func newEnvAnnouncing(t testing.TB, nc *nats.Conn, replicas int, edit func(*Config), relayEdit func(*streams.RelayConfig),
	announce bool) *env {
	t.Helper()
	opts := []persisttest.Option{persisttest.WithCommitHook(streams.WakeRelay(nc))}
	if announce {
		opts = append(opts, persisttest.WithRevocationHook(streams.AnnounceRevocations(nc)))
	}
	store := persisttest.NewStore(t, opts...)
	logger := slog.New(slog.DiscardHandler)
	rcfg := streams.RelayConfig{Store: store, NATS: nc, Logger: logger, PollInterval: 100 * time.Millisecond}
	if relayEdit != nil {
		relayEdit(&rcfg)
	}
	relay, err := streams.NewRelay(rcfg)
	require.NoError(t, err)
	e := &env{store: store, nc: nc, joins: map[string]Join{}}
	ctx, cancel := context.WithCancel(context.Background())
	var g errgroup.Group
	g.Go(func() error { return relay.Run(ctx) })
	for range max(replicas, 1) {
		cfg := Config{Store: store, NATS: nc, Logger: logger, Workers: 2, SweepInterval: 50 * time.Millisecond}
		if edit != nil {
			edit(&cfg)
		}
		hub, err := New(cfg)
		require.NoError(t, err)
		g.Go(func() error { return hub.Run(ctx) })
		ts := httptest.NewServer(e.handler(hub))
		e.hubs, e.urls = append(e.hubs, hub), append(e.urls, ts.URL)
		t.Cleanup(ts.Close)
	}
	t.Cleanup(func() {
		cancel()
		require.NoError(t, g.Wait())
		// Every socket is gone once the hub stops, and with it its share of the per-account cap.
		for _, h := range e.hubs {
			h.mu.Lock()
			require.Empty(t, h.sockets, "sockets left after the hub stopped")
			require.Empty(t, h.perOwner, "per-account counts left after the hub stopped")
			h.mu.Unlock()
		}
	})
	for _, h := range e.hubs {
		waitRunning(t, h)
	}
	e.owner = persisttest.User(t, store, nil)
	e.member = persisttest.User(t, store, nil)
	e.ws = persisttest.Workspace(t, store, e.owner.ID)
	persisttest.Member(t, store, e.ws.ID, e.member.ID, persist.RoleMember)
	e.general = persisttest.Channel(t, store, persist.ActorFor(e.owner), e.ws.ID, "general").ID
	return e
}

func waitRunning(t testing.TB, h *Hub) {
	t.Helper()
	require.Eventually(t, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.running
	}, 10*time.Second, 5*time.Millisecond, "the hub did not start")
}

// handler is the API server's part, reduced to a token look-up.
func (e *env) handler(h *Hub) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		e.mu.Lock()
		j, ok := e.joins[token]
		e.mu.Unlock()
		if ok && strings.HasPrefix(token, persist.PrefixSessionToken) {
			// As the API server does on a handshake: the session must still be live.
			_, _, err := h.ResolveSession(r.Context(), token)
			ok = err == nil
		}
		if ok && strings.HasPrefix(token, persist.PrefixBotToken) {
			// And the bot token not revoked.
			_, _, err := e.store.BotTokenAuthenticate(r.Context(), token)
			ok = err == nil
		}
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		j.AfterCursor = r.URL.Query().Get("after_cursor")
		if err := h.Accept(w, r, j); err != nil {
			pe, _ := persist.ErrorOf(err)
			w.Header().Set("Content-Type", "application/json")
			status := refusalStatus[pe.Code]
			if status == 0 {
				status = http.StatusInternalServerError
			}
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": pe.Message, "code": pe.Code})
		}
	})
}

// refusalStatus is the statuses of the refusals Accept returns, as server answers them (server
// owns the full table; realtime cannot import it).
var refusalStatus = map[persist.Code]int{
	persist.CodeUnauthenticated: http.StatusUnauthorized,
	persist.CodeForbidden:       http.StatusForbidden,
	persist.CodeNotFound:        http.StatusNotFound,
	persist.CodeRateLimited:     http.StatusTooManyRequests,
	persist.CodeUnavailable:     http.StatusServiceUnavailable,
	persist.CodeResyncRequired:  http.StatusGone,
	persist.CodeInvalidRequest:  http.StatusBadRequest,
}

// session signs u in and returns a token whose sockets rest on that session.
func (e *env) session(t testing.TB, u persist.User) string {
	t.Helper()
	token := persisttest.Session(t, e.store, u.ID)
	ctx := context.Background()
	sess, err := persist.WithTxV(ctx, e.store, func(tx *persist.Tx) (persist.Session, error) {
		s, _, err := tx.SessionResolve(ctx, token)
		return s, err
	})
	require.NoError(t, err)
	e.mu.Lock()
	e.joins[token] = Join{Actor: persist.ActorFor(u), WorkspaceID: e.ws.ID, SessionID: sess.ID}
	e.mu.Unlock()
	return token
}

// bot registers a bot token as the server would authenticate it and returns its raw value.
func (e *env) bot(t *testing.T, bot persist.User, tok persist.BotToken) string {
	t.Helper()
	e.mu.Lock()
	e.joins[tok.Token] = Join{Actor: persist.Actor{UserID: bot.ID, Kind: bot.Kind, TokenWorkspaceID: tok.WorkspaceID,
		OwnerUserID: bot.OwnerUserID, Scopes: tok.Scopes}, WorkspaceID: tok.WorkspaceID, TokenID: tok.ID}
	e.mu.Unlock()
	return tok.Token
}

// dial opens a socket on replica 0 after a cursor ("" for the start).
func (e *env) dial(t testing.TB, token, after string) *realtimetest.Socket {
	t.Helper()
	return e.dialOn(t, 0, realtimetest.Dial{Token: token}, after)
}

func (e *env) dialOn(t testing.TB, replica int, d realtimetest.Dial, after string) *realtimetest.Socket {
	t.Helper()
	d.Path = "/ws?after_cursor=" + after
	s, status := realtimetest.DialSocket(t, e.urls[replica], d)
	require.Equal(t, http.StatusSwitchingProtocols, status)
	return s
}

// add appends an event to #general as the owner and returns its cursor.
func (e *env) add(t testing.TB, body string) int64 {
	t.Helper()
	ctx := context.Background()
	ev, err := persist.WithTxV(ctx, e.store, func(tx *persist.Tx) (persist.Event, error) {
		return tx.EventAppend(ctx, persist.EventInput{WorkspaceID: e.ws.ID, ChannelID: e.general, ActorID: e.owner.ID,
			Type: "message.created", Payload: map[string]string{"body": body}})
	})
	require.NoError(t, err)
	return ev.Cursor
}

// counted is a counter's value.
func counted(c prometheus.Counter) int {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return int(m.GetCounter().GetValue())
}

// closes is how many sockets the hub closed with code.
func closes(h *Hub, code int) int {
	return counted(h.metrics.closes.WithLabelValues(strconv.Itoa(code)))
}

// socketsLive waits until every socket of the hub is live: past its catch-up, taking events
// from the feed.
func socketsLive(t testing.TB, h *Hub) {
	t.Helper()
	require.Eventually(t, func() bool {
		h.mu.Lock()
		sockets := make([]*socket, 0, len(h.sockets))
		for s := range h.sockets {
			sockets = append(sockets, s)
		}
		h.mu.Unlock()
		for _, s := range sockets {
			s.mu.Lock()
			live := s.state == stateLive
			s.mu.Unlock()
			if !live {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "a socket did not go live")
}

// feedLast is the last cursor the hub's feed of a workspace dispatched (0 without a feed).
func feedLast(h *Hub, workspaceID string) int64 {
	h.mu.Lock()
	f := h.feeds[workspaceID]
	h.mu.Unlock()
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}
