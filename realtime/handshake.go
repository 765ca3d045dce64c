package realtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/natterchat/natter/persist"
)

// handshakeCache answers the two questions every handshake and reconnect asks Postgres (whose
// session a token is, and whether its person may read the workspace) from memory, so that a
// reconnect storm costs no queries. It stays in step through the revocation announcements the
// hub already receives: each one drops what it names, on every replica. The TTL is only a safety
// net for an announcement lost in transit, and the cache answers nothing while the hub is not
// subscribed or after NATS reconnected or dropped a message, when announcements may have been
// missed. Only successes are kept: a refusal may turn into an admission (an invitation accepted)
// with no announcement, so it is asked again.
//
// Bot tokens are not cached: their authentication records each use, and a user bot's standing
// also rests on its owner's membership, which the announcements name by the owner.
type handshakeCache struct {
	ttl time.Duration
	max int
	nc  *nats.Conn
	// sub is the hub's subscription to the announcements, nil while it has none.
	sub atomic.Pointer[nats.Subscription]

	mu        sync.Mutex
	gen       uint64 // bumped by every invalidation; a lookup begun before it may not fill
	lastEpoch uint64
	sessions  map[string]sessionEntry // by the token's hash
	bySession map[string]string       // session id → token hash, for revocations by id
	viewers   map[viewerKey]viewerEntry

	lookups *prometheus.CounterVec
	// The four series of lookups, resolved once: handshakes come in storms.
	sessionHits, sessionMisses, viewerHits, viewerMisses prometheus.Counter
}

type sessionEntry struct {
	at      time.Time
	session persist.Session
	user    persist.User
}

type viewerKey struct{ workspaceID, userID string }

type viewerEntry struct {
	at     time.Time
	viewer persist.Viewer
}

func newHandshakeCache(nc *nats.Conn, ttl time.Duration, max int) *handshakeCache {
	c := &handshakeCache{ttl: ttl, max: max, nc: nc,
		sessions: map[string]sessionEntry{}, bySession: map[string]string{}, viewers: map[viewerKey]viewerEntry{},
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "natter_realtime_handshake_lookups_total",
			Help: "Session and membership look-ups of WebSocket handshakes, by source: the cache or Postgres."},
			[]string{"kind", "source"})}
	c.sessionHits, c.sessionMisses = c.lookups.WithLabelValues("session", "cache"), c.lookups.WithLabelValues("session", "postgres")
	c.viewerHits, c.viewerMisses = c.lookups.WithLabelValues("membership", "cache"), c.lookups.WithLabelValues("membership", "postgres")
	return c
}

// beginLocked checks that announcements are trusted and returns the generation a lookup starts
// at; ok is false when the cache must be bypassed. Caller holds c.mu.
func (c *handshakeCache) beginLocked() (gen uint64, ok bool) {
	sub := c.sub.Load()
	if sub == nil || !c.nc.IsConnected() {
		return 0, false
	}
	dropped, err := sub.Dropped()
	if err != nil {
		return 0, false
	}
	// Whatever was cached before a reconnect or a dropped message may have missed its
	// announcement.
	n := c.nc.Stats().Reconnects + uint64(dropped)
	if n != c.lastEpoch {
		c.lastEpoch = n
		c.clearLocked()
	}
	return c.gen, true
}

func (c *handshakeCache) clearLocked() {
	c.gen++
	clear(c.sessions)
	clear(c.bySession)
	clear(c.viewers)
}

// session resolves a raw session token, from memory when it can.
func (c *handshakeCache) session(ctx context.Context, store *persist.Store, raw string) (persist.Session, persist.User, error) {
	hash := string(persist.HashSecret(raw))
	now := time.Now()
	c.mu.Lock()
	gen, use := c.beginLocked()
	e, hit := c.sessions[hash]
	c.mu.Unlock()
	// A session's own expiry is checked here too, by the store's clock: it ends with no
	// announcement.
	if use && hit && now.Sub(e.at) < c.ttl && e.session.ExpiresAt.After(store.Now()) {
		c.sessionHits.Inc()
		return e.session, e.user, nil
	}
	c.sessionMisses.Inc()
	type resolved struct {
		s persist.Session
		u persist.User
	}
	res, err := persist.ReadV(ctx, store, func(tx *persist.Reader) (resolved, error) {
		s, u, err := tx.SessionResolve(ctx, raw)
		return resolved{s, u}, err
	})
	if err != nil || !use {
		return res.s, res.u, err
	}
	c.fillSession(gen, hash, sessionEntry{at: now, session: res.s, user: res.u})
	return res.s, res.u, nil
}

// fillSession keeps a session read at generation gen, unless an announcement came since.
func (c *handshakeCache) fillSession(gen uint64, hash string, e sessionEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	evictLocked(c.sessions, c.max, func(old sessionEntry) bool { return e.at.Sub(old.at) >= c.ttl },
		func(_ string, old sessionEntry) { delete(c.bySession, old.session.ID) })
	c.sessions[hash] = e
	c.bySession[e.session.ID] = hash
}

// viewer checks that a person (not a bot token) may read a workspace, from memory when it can.
// checked is when Postgres last said so, which is when the socket's own periodic check is
// counted from.
func (c *handshakeCache) viewer(ctx context.Context, store *persist.Store, actor persist.Actor, workspaceID string) (
	v persist.Viewer, checked time.Time, err error) {
	key := viewerKey{workspaceID, actor.UserID}
	now := time.Now()
	c.mu.Lock()
	gen, use := c.beginLocked()
	e, hit := c.viewers[key]
	c.mu.Unlock()
	if use && hit && now.Sub(e.at) < c.ttl {
		c.viewerHits.Inc()
		return e.viewer, e.at, nil
	}
	c.viewerMisses.Inc()
	v, err = persist.ReadV(ctx, store, func(tx *persist.Reader) (persist.Viewer, error) {
		return tx.ViewerFor(ctx, actor, workspaceID)
	})
	if err != nil || !use {
		return v, now, err
	}
	c.fillViewer(gen, key, viewerEntry{at: now, viewer: v})
	return v, now, nil
}

// fillViewer keeps a membership read at generation gen, unless an announcement came since.
func (c *handshakeCache) fillViewer(gen uint64, key viewerKey, e viewerEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	evictLocked(c.viewers, c.max, func(old viewerEntry) bool { return e.at.Sub(old.at) >= c.ttl }, nil)
	c.viewers[key] = e
}

// evictLocked keeps a map under max entries: expired ones go first, then arbitrary ones (a
// map's iteration order), which at worst costs their next handshake a query. Caller holds c.mu.
func evictLocked[K comparable, V any](m map[K]V, max int, expired func(V) bool, drop func(K, V)) {
	if len(m) < max {
		return
	}
	for k, v := range m {
		if expired(v) || len(m) >= max {
			delete(m, k)
			if drop != nil {
				drop(k, v)
			}
		}
	}
}

// revoke drops what an announcement names, and makes every lookup in flight leave its result
// out of the cache: it may have read the database before the change committed.
func (c *handshakeCache) revoke(r persist.Revocation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	switch {
	case r.SessionID != "":
		if h, ok := c.bySession[r.SessionID]; ok {
			delete(c.sessions, h)
			delete(c.bySession, r.SessionID)
		}
	case r.WorkspaceID != "" && r.UserID != "":
		delete(c.viewers, viewerKey{r.WorkspaceID, r.UserID})
	case r.WorkspaceID != "":
		for k := range c.viewers {
			if k.workspaceID == r.WorkspaceID {
				delete(c.viewers, k)
			}
		}
	}
}

// listen starts (sub non-nil) or stops answering from memory; either way nothing cached so far
// is kept.
func (c *handshakeCache) listen(sub *nats.Subscription) {
	c.mu.Lock()
	c.sub.Store(sub)
	c.clearLocked()
	c.mu.Unlock()
}

// viewerFor is the handshake's membership check: from the cache for people, from Postgres for
// bot tokens. checked is when Postgres last vouched for it.
func (h *Hub) viewerFor(ctx context.Context, j Join) (persist.Viewer, time.Time, error) {
	if j.TokenID == "" {
		return h.handshake.viewer(ctx, h.store, j.Actor, j.WorkspaceID)
	}
	v, err := persist.ReadV(ctx, h.store, func(tx *persist.Reader) (persist.Viewer, error) {
		return tx.ViewerFor(ctx, j.Actor, j.WorkspaceID)
	})
	return v, time.Now(), err
}

// ResolveSession is the session look-up of a WebSocket handshake (persist's SessionResolve),
// answered from memory while no announcement has ended the session. Codes: unauthenticated.
func (h *Hub) ResolveSession(ctx context.Context, raw string) (persist.Session, persist.User, error) {
	return h.handshake.session(ctx, h.store, raw)
}
