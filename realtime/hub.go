package realtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/streams"
)

// Close codes of CONTRACT.md §Events.
const (
	// CloseRevoked: the socket's credentials or membership ended.
	CloseRevoked = ws.StatusPolicyViolation // 1008
	// CloseAbuse: the client asked for more than it reads (a ping flood).
	CloseAbuse = ws.StatusPolicyViolation // 1008
	// CloseTooSlow: the socket's write queue filled; reconnect from the last cursor.
	CloseTooSlow ws.StatusCode = 1013
	// CloseResync: the cursor is unknown or older than the retained events.
	CloseResync ws.StatusCode = 4001
	// CloseGoingAway: the server is shutting down.
	CloseGoingAway = ws.StatusGoingAway // 1001
)

// Config configures the hub.
type Config struct {
	// Store is the database: backfill, revalidation and visibility facts. Required.
	Store *persist.Store
	// NATS carries the workspace streams and ephemeral events. Required.
	NATS *nats.Conn
	// Logger receives socket problems. Default slog.Default().
	Logger *slog.Logger
	// Workers is the size of the pool that reads, writes, catches up and revalidates sockets.
	// Default 16.
	Workers int
	// MaxSockets caps the sockets of this process; more are refused with 503. Default 50000,
	// and never more than the descriptor limit (RLIMIT_NOFILE) less FDReserve.
	MaxSockets int
	// FDReserve is how many of the process's file descriptors sockets leave to everything else
	// (HTTP requests, the database pool, NATS, files), so the API keeps answering when sockets
	// reach their cap. Default a quarter of RLIMIT_NOFILE, at most 1024.
	FDReserve int
	// MaxSocketsPerUser caps the open sockets of one person, and of one bot token, on this
	// process; more are refused with 429 before the upgrade. Default 64.
	MaxSocketsPerUser int
	// QueueBytes bounds every frame waiting for one socket: events, backfill, pings, pongs (each
	// counted though they are coalesced) and the close. An event past it closes the socket with
	// 1013 (too slow); pongs owed past half of it close it with 1008 (a ping flood). A backfill
	// page takes at most half, and live events that arrive during a backfill are held up to the
	// other half, then read again instead.
	// Default 1 MiB.
	QueueBytes int
	// SendBuffer, when positive, sets each socket's kernel send buffer (SO_SNDBUF), trading
	// memory for how much a slow reader may lag before its queue fills. Default 0: the kernel's.
	SendBuffer int
	// PingInterval is how often an idle socket is pinged; one silent for two intervals is
	// reaped as half-open. Default 30s.
	PingInterval time.Duration
	// RevalidateInterval is how long a session socket's check stays good: a delivery after it
	// checks the session and membership again first, and the idle timer checks too. Default 15s.
	RevalidateInterval time.Duration
	// SweepInterval is the idle timer's tick: pings, reaping, revalidation, feed start-up
	// retries. Default 1s.
	SweepInterval time.Duration
	// FeedLinger keeps a workspace's stream consumer this long after its last socket leaves.
	// Default 30s.
	FeedLinger time.Duration
	// HandshakeTTL bounds how long a handshake's session or membership answer is reused without
	// Postgres, should a revocation announcement be lost. Default 30s.
	HandshakeTTL time.Duration
	// HandshakeCacheSize caps the sessions, and separately the memberships, kept for handshakes.
	// Default 50000.
	HandshakeCacheSize int
	// PresenceTTL is how long this replica's presence registration lasts unrenewed (it renews
	// every third of it): a replica that dies stops counting anyone online at most this long,
	// plus a third, later. Default 30s.
	PresenceTTL time.Duration
	// PresenceFlush is how often the people whose sockets opened or closed here are written
	// and announced; changes within it are coalesced. Default 500ms.
	PresenceFlush time.Duration
}

// Hub accepts sockets and feeds them. Run it in the server's errgroup.
type Hub struct {
	cfg     Config
	store   *persist.Store
	logger  *slog.Logger
	poller  *poller
	queue   chan *socket
	done    chan struct{}
	metrics hubMetrics
	checks  checkCache
	// handshake answers handshakes without Postgres (handshake.go).
	handshake *handshakeCache
	// presence counts the sockets of each person here and announces who is online (presence.go).
	presence *presence

	// maxSockets is Config.MaxSockets within the descriptor limit less the reserve.
	maxSockets int

	mu       sync.Mutex
	running  bool
	sockets  map[*socket]struct{}
	perOwner map[string]int // open sockets by socket.owner, capped by MaxSocketsPerUser
	feeds    map[string]*feed
}

type hubMetrics struct {
	sockets    prometheus.Gauge
	feeds      prometheus.Gauge
	frames     prometheus.Counter
	closes     *prometheus.CounterVec
	backfilled *prometheus.CounterVec
	// catchUpReads counts the reads catch-up makes below the feed's tail: stream blocks (each
	// shared by the sockets that need it) and Postgres pages (one per socket).
	catchUpReads *prometheus.CounterVec
	// checks counts the statements that revalidated sockets: bulk (many people's standings in
	// one) or single (one socket's).
	checks *prometheus.CounterVec
	// reaped counts the sockets dropped as half-open.
	reaped prometheus.Counter
}

// New validates cfg and applies its defaults.
func New(cfg Config) (*Hub, error) {
	if cfg.Store == nil || cfg.NATS == nil {
		return nil, errors.New("realtime: Config.Store and Config.NATS are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	defaults := []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.PingInterval, 30 * time.Second}, {&cfg.RevalidateInterval, 15 * time.Second},
		{&cfg.SweepInterval, time.Second}, {&cfg.FeedLinger, 30 * time.Second},
		{&cfg.HandshakeTTL, 30 * time.Second}, {&cfg.PresenceTTL, 30 * time.Second},
		{&cfg.PresenceFlush, 500 * time.Millisecond}}
	for _, d := range defaults {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if cfg.Workers == 0 {
		cfg.Workers = 16
	}
	if cfg.MaxSockets == 0 {
		cfg.MaxSockets = 50000
	}
	if cfg.QueueBytes == 0 {
		cfg.QueueBytes = 1 << 20
	}
	if cfg.MaxSocketsPerUser == 0 {
		cfg.MaxSocketsPerUser = 64
	}
	if cfg.HandshakeCacheSize == 0 {
		cfg.HandshakeCacheSize = 50000
	}
	if cfg.Workers < 1 || cfg.MaxSockets < 1 || cfg.QueueBytes < 1 || cfg.MaxSocketsPerUser < 1 || cfg.FDReserve < 0 ||
		cfg.HandshakeCacheSize < 1 {
		return nil, errors.New("realtime: Config.Workers, MaxSockets, MaxSocketsPerUser and QueueBytes must be positive, FDReserve not negative")
	}
	maxSockets, err := socketCap(cfg.MaxSockets, cfg.FDReserve)
	if err != nil {
		return nil, err
	}
	p, err := newPoller()
	if err != nil {
		return nil, err
	}
	h := &Hub{cfg: cfg, store: cfg.Store, logger: cfg.Logger.With("component", "realtime"), poller: p,
		maxSockets: maxSockets,
		// Each socket sits in the queue at most once, so maxSockets slots never fill.
		queue: make(chan *socket, maxSockets), done: make(chan struct{}),
		handshake: newHandshakeCache(cfg.NATS, cfg.HandshakeTTL, cfg.HandshakeCacheSize),
		checks:    checkCache{entries: map[string]checkEntry{}, share: min(checkShare, cfg.RevalidateInterval)}, sockets: map[*socket]struct{}{},
		perOwner: map[string]int{}, feeds: map[string]*feed{}, presence: newPresence(cfg),
		metrics: hubMetrics{
			sockets: prometheus.NewGauge(prometheus.GaugeOpts{Name: "natter_realtime_sockets", Help: "Open WebSocket connections."}),
			feeds:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "natter_realtime_feeds", Help: "Workspace stream consumers on this node."}),
			frames:  prometheus.NewCounter(prometheus.CounterOpts{Name: "natter_realtime_frames_total", Help: "Event frames written to sockets."}),
			closes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "natter_realtime_closes_total",
				Help: "Sockets closed by the server, by close code."}, []string{"code"}),
			backfilled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "natter_realtime_backfilled_total",
				Help: "Events sent to sockets while catching up, by source: the feed's tail in memory, the workspace's stream or Postgres."},
				[]string{"source"}),
			catchUpReads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "natter_realtime_catchup_reads_total",
				Help: "Reads of catch-up older than the feed's tail, by source: stream blocks (shared by sockets) or Postgres pages."},
				[]string{"source"}),
			checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "natter_realtime_revalidations_total",
				Help: "Statements that re-checked open sockets' credentials and membership: bulk (many people's in one statement) or single (one socket's)."},
				[]string{"kind"}),
			reaped: prometheus.NewCounter(prometheus.CounterOpts{Name: "natter_realtime_reaped_total",
				Help: "Sockets dropped as half-open: nothing came from the client for two ping intervals."}),
		}}
	// The close codes the server sends are exposed from the start, at zero, so that a dashboard
	// or an alert sees the series before the first close; so are the catch-up sources.
	for _, code := range []ws.StatusCode{ws.StatusNormalClosure, CloseGoingAway, ws.StatusProtocolError,
		CloseRevoked, ws.StatusInvalidFramePayloadData, ws.StatusMessageTooBig, ws.StatusInternalServerError,
		CloseTooSlow, CloseResync} {
		h.metrics.closes.WithLabelValues(strconv.Itoa(int(code)))
	}
	for _, source := range []string{"memory", "stream", "postgres"} {
		h.metrics.backfilled.WithLabelValues(source)
	}
	for _, source := range []string{"stream", "postgres"} {
		h.metrics.catchUpReads.WithLabelValues(source)
	}
	for _, kind := range []string{"bulk", "single"} {
		h.metrics.checks.WithLabelValues(kind)
	}
	return h, nil
}

// Collectors are the hub's metrics, for the server's registry.
func (h *Hub) Collectors() []prometheus.Collector {
	m := h.metrics
	return []prometheus.Collector{m.sockets, m.feeds, m.frames, m.closes, m.backfilled, m.catchUpReads, m.checks, m.reaped,
		h.handshake.lookups, h.presence.changes}
}

// Run serves sockets until ctx ends, then closes every socket with 1001 and stops the feeds.
func (h *Hub) Run(ctx context.Context) error {
	h.mu.Lock()
	h.running = true
	h.mu.Unlock()
	revocations, err := streams.SubscribeRevocations(h.cfg.NATS, h.recheck)
	if err != nil {
		return err
	}
	h.handshake.listen(revocations)
	// This replica's own commits reach the cache before their requests are answered: a request
	// right after a sign-out here must not be admitted from memory while the announcement is on
	// its way.
	stopLocal := h.cfg.Store.ListenRevocations(h.handshake.revokeAll)
	defer func() { stopLocal(); h.handshake.listen(nil); _ = revocations.Unsubscribe() }()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return h.poller.run(h.done, h.ready) })
	for i := 0; i < h.cfg.Workers; i++ {
		g.Go(func() error { h.work(gctx); return nil })
	}
	g.Go(func() error { h.sweepLoop(gctx); return nil })
	g.Go(func() error { h.presence.run(gctx); return nil })
	<-gctx.Done()
	h.mu.Lock()
	h.running = false
	sockets := make([]*socket, 0, len(h.sockets))
	for s := range h.sockets {
		sockets = append(sockets, s)
	}
	h.mu.Unlock()
	close(h.done)
	err = g.Wait()
	for _, s := range sockets {
		s.goAway()
	}
	// Feeds stop outside h.mu: stopping waits for an event being fanned out, which may close a
	// socket (and so take h.mu).
	h.mu.Lock()
	feeds := h.feeds
	h.feeds = map[string]*feed{}
	h.mu.Unlock()
	for _, f := range feeds {
		f.stop()
	}
	return errors.Join(err, h.poller.close())
}

// recheck makes the sockets that use revoked credentials, or a changed membership, check them
// now instead of at their next periodic check: a logout closes its sockets with 1008 at once,
// on every replica.
func (h *Hub) recheck(r persist.Revocation) {
	h.handshake.revoke(r)
	h.checks.clear()
	h.mu.Lock()
	var hit []*socket
	for s := range h.sockets {
		if s.uses(r) {
			hit = append(hit, s)
		}
	}
	h.mu.Unlock()
	for _, s := range hit {
		s.mu.Lock()
		s.announced++ // live events wait for the check (see socket.announced)
		s.addWorkLocked(workCheck)
		s.mu.Unlock()
	}
}

// ready is the poller's callback: a socket became readable or writable.
func (h *Hub) ready(s *socket, readable, writable bool) {
	var w work
	if readable {
		w |= workRead
		// The client sent something (or hung up, which the read finds): it is not half-open,
		// however long the workers take to read it.
		s.lastRead.Store(time.Now().UnixNano())
	}
	if writable {
		w |= workFlush
	}
	s.mu.Lock()
	s.disarmed = true
	s.addWorkLocked(w)
	s.mu.Unlock()
}

func (h *Hub) work(ctx context.Context) {
	buf := make([]byte, 2*(maxClientFrame+16))
	for {
		select {
		case <-h.done:
			return
		case s := <-h.queue:
			s.run(ctx, buf)
		}
	}
}

// Join is a request to open a socket, as the server authenticated it.
type Join struct {
	Actor       persist.Actor
	WorkspaceID string
	// SessionID is the session behind the credentials, "" for bot tokens and proxy assertions.
	SessionID string
	// TokenID is the bot token behind the credentials, "" for people. A revoked token, like an
	// ended session, closes the socket at its next check.
	TokenID string
	// AfterCursor is the client's cursor; backfill starts after it.
	AfterCursor string
	// Presence asks for the workspace's presence.changed events as the server derives them
	// (the socket's ?presence=1); without it a socket sees only what ClickClack clients expect.
	Presence bool
}

// bearerProtocol reports whether a subprotocol carries a bearer token; the one the client offered
// is echoed back, since clients reject the socket otherwise.
func bearerProtocol(p string) bool {
	return strings.HasPrefix(p, "natter.bearer.") || strings.HasPrefix(p, "clickclack.bearer.")
}

// Accept revalidates the workspace and the caller's membership, upgrades the connection and
// starts the socket: catch-up after the cursor (tail, stream, Postgres), then live. Before the
// upgrade it returns errors for the server to write (not_found, forbidden, unavailable); after
// it, problems close the socket (4001 for a cursor to resync).
func (h *Hub) Accept(w http.ResponseWriter, r *http.Request, j Join) error {
	ctx := r.Context()
	owner := j.owner()
	// A caller at a cap is refused before the database is asked; the count is taken again below.
	h.mu.Lock()
	err := h.admitLocked(owner)
	h.mu.Unlock()
	if err != nil {
		return err
	}
	viewer, checked, err := h.viewerFor(ctx, j)
	if err != nil {
		return err
	}
	s := &socket{hub: h, viewer: viewer, actor: j.Actor, workspaceID: j.WorkspaceID, sessionID: j.SessionID,
		tokenID: j.TokenID, owner: owner, checkedAt: checked, state: stateJoining, presence: j.Presence}
	now := time.Now()
	// A socket is pinged once it has been idle for a ping interval, counted from its handshake:
	// a fresh one needs no ping at the idle timer's first tick (a storm of 15,000 handshakes
	// paid a ping write and a pong read each within the second).
	s.lastRead.Store(now.UnixNano())
	s.lastPing = now
	// The socket joins its feed before the upgrade answers, so whatever is published once the
	// client holds an open socket reaches it: the pending list keeps it during the backfill.
	h.mu.Lock()
	if err := h.admitLocked(s.owner); err != nil {
		h.mu.Unlock()
		return err
	}
	h.sockets[s] = struct{}{}
	h.perOwner[s.owner]++
	h.presence.join(s.presenceKey())
	f, fresh := h.feedLocked(j.WorkspaceID)
	f.attach(s)
	h.mu.Unlock()
	h.metrics.sockets.Inc()
	if fresh {
		f.tryStart()
	}
	// The write deadline stays: the 101 is not always the connection's first write (a keep-alive
	// client may have left earlier responses unread and the send buffer full).
	conn, rw, _, err := ws.HTTPUpgrader{Timeout: 10 * time.Second, Protocol: bearerProtocol}.Upgrade(r, w)
	if err == nil {
		err = s.setConn(conn)
	}
	if err != nil {
		// The upgrader has answered the client already.
		if conn != nil {
			_ = conn.Close()
		}
		s.shutdown()
		return nil
	}
	if n := rw.Reader.Buffered(); n > 0 {
		early, _ := rw.Reader.Peek(n)
		s.inbuf, s.unparsed = append([]byte(nil), early...), true
	}
	after, err := persist.ParseCursor(j.AfterCursor)
	if err != nil {
		s.rejectNow(CloseResync, "resync required")
		return nil
	}
	if err := h.poller.add(s); err != nil {
		s.rejectNow(ws.StatusInternalServerError, "")
		return nil
	}
	// The registration is armed for reading, and epoll reports bytes that arrived before it, so
	// only bytes the handshake's reader buffered need a read now (a storm saves a read that would
	// find nothing, per socket).
	due := workCatchUp
	if len(s.inbuf) > 0 {
		due |= workRead
	}
	s.mu.Lock()
	s.pos, s.state, s.armedRead = after, stateCatchingUp, true
	s.addWorkLocked(due)
	s.mu.Unlock()
	return nil
}

// admitLocked refuses a socket over the process's cap (503) or its account's (429). Caller
// holds h.mu.
func (h *Hub) admitLocked(owner string) error {
	if !h.running || len(h.sockets) >= h.maxSockets {
		return persist.Errorf(persist.CodeUnavailable, "the realtime service is not accepting sockets right now; retry shortly")
	}
	if h.perOwner[owner] >= h.cfg.MaxSocketsPerUser {
		return persist.Errorf(persist.CodeRateLimited, "%d sockets are open for this account on this server, the most allowed; close one before opening another",
			h.cfg.MaxSocketsPerUser)
	}
	return nil
}

// owner is what the per-account socket cap counts by: the bot token for bots, the person
// otherwise.
func (j Join) owner() string {
	if j.TokenID != "" {
		return "token:" + j.TokenID
	}
	return "user:" + j.Actor.UserID
}

// feedLocked returns the workspace's feed, creating it (fresh: the caller starts it). Caller
// holds h.mu.
func (h *Hub) feedLocked(workspaceID string) (f *feed, fresh bool) {
	f = h.feeds[workspaceID]
	if f == nil {
		f = newFeed(h, workspaceID)
		h.feeds[workspaceID] = f
		h.metrics.feeds.Inc()
		fresh = true
	}
	return f, fresh
}

// forget drops a closed socket.
func (h *Hub) forget(s *socket) {
	h.mu.Lock()
	_, ok := h.sockets[s]
	if ok {
		delete(h.sockets, s)
		if h.perOwner[s.owner]--; h.perOwner[s.owner] <= 0 {
			delete(h.perOwner, s.owner)
		}
		h.presence.leave(s.presenceKey())
	}
	h.mu.Unlock()
	if ok {
		h.metrics.sockets.Dec()
	}
}

// PublishEphemeral sends an authorized ephemeral event over core NATS to every node's sockets.
func (h *Hub) PublishEphemeral(ev persist.Event) error {
	body, err := ev.MarshalJSON()
	if err != nil {
		return err
	}
	if err := h.cfg.NATS.Publish(streams.EphemeralSubject(ev), body); err != nil {
		return fmt.Errorf("publish ephemeral event: %w", err)
	}
	return nil
}

// PublishSelf sends a person's own channel standing (persist.ChannelStandingUpdated) over core
// NATS to that person's sockets on every node.
func (h *Hub) PublishSelf(ev persist.Event) error {
	body, err := ev.MarshalJSON()
	if err != nil {
		return err
	}
	if err := h.cfg.NATS.Publish(streams.SelfSubject(ev), body); err != nil {
		return fmt.Errorf("publish channel standing: %w", err)
	}
	return nil
}

// sweepLoop is the idle timer: pings, half-open reaping, revalidation and feed upkeep.
func (h *Hub) sweepLoop(ctx context.Context) {
	t := time.NewTicker(h.cfg.SweepInterval)
	defer t.Stop()
	var bulk sync.WaitGroup
	defer bulk.Wait()
	checking := false
	done := make(chan struct{}, 1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			checking = false
		case <-t.C:
			// One bulk check at a time: the sockets a running one has not reached are taken at
			// a later tick.
			due := h.sweep(time.Now(), !checking)
			if len(due) > 0 {
				checking = true
				bulk.Go(func() {
					h.revalidateBulk(ctx, due)
					done <- struct{}{}
				})
			}
		}
	}
}

// sweep is the idle timer's visit to every socket and feed; with bulk, it returns the sockets
// due for a bulk check.
func (h *Hub) sweep(now time.Time, bulk bool) []dueCheck {
	h.mu.Lock()
	sockets := make([]*socket, 0, len(h.sockets))
	for s := range h.sockets {
		sockets = append(sockets, s)
	}
	var idle, active []*feed
	for id, f := range h.feeds {
		if f.idleFor(now) > h.cfg.FeedLinger {
			delete(h.feeds, id)
			idle = append(idle, f)
			h.metrics.feeds.Dec()
		} else {
			active = append(active, f)
		}
	}
	h.mu.Unlock()
	for _, f := range idle {
		f.stop()
	}
	for _, f := range active {
		f.tryStart()
		f.history.expire(now)
	}
	var due []dueCheck
	for _, s := range sockets {
		if d, ok := s.tick(now, bulk); ok {
			due = append(due, d)
		}
	}
	h.checks.expire(now)
	return due
}
