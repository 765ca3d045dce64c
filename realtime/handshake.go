package realtime

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

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
// A bot's standing is kept the same way, by its bot, owner and token workspace, dropped when the
// bot's or its owner's membership changes. A bot token itself is not kept: SPEC §Bot token has
// each handshake record the token's use, which is a write, so each reads it (one statement that
// does not wait for the disk; see persist's Store.BotTokenAuthenticate). Concurrent misses of one key share one
// look-up (a storm of one account's reconnects asks Postgres once), within one generation: a
// handshake that starts after an announcement never joins a look-up that began before it.
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
	bots      map[botViewerKey]viewerEntry

	// flights coalesces concurrent look-ups of one key and generation.
	flights singleflight.Group

	lookups  *prometheus.CounterVec
	counters map[string][2]prometheus.Counter // by kind: from the cache, from Postgres
}

type sessionEntry struct {
	at      time.Time
	session persist.Session
	user    persist.User
}

type viewerKey struct{ workspaceID, userID string }

// botViewerKey is what a bot token's standing in a workspace rests on (persist's ViewerFor for a
// bot): the bot, its owner for a user bot or its token's issuer for a service bot (ownerID: see
// persist.Actor.BoundBy), and the workspace its token is for.
type botViewerKey struct{ workspaceID, botID, ownerID, tokenWorkspaceID string }

type viewerEntry struct {
	at     time.Time
	viewer persist.Viewer
}

func newHandshakeCache(nc *nats.Conn, ttl time.Duration, max int) *handshakeCache {
	c := &handshakeCache{ttl: ttl, max: max, nc: nc,
		sessions: map[string]sessionEntry{}, bySession: map[string]string{}, viewers: map[viewerKey]viewerEntry{},
		bots: map[botViewerKey]viewerEntry{},
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "natter_realtime_handshake_lookups_total",
			Help: "Session look-ups of API requests and WebSocket handshakes, and bot-token and membership look-ups of handshakes, by source: the cache or Postgres."},
			[]string{"kind", "source"})}
	// Resolved once, so the series exist from the start and a storm of handshakes does not hash
	// label values.
	c.counters = map[string][2]prometheus.Counter{}
	for _, kind := range []string{"session", "membership"} {
		c.counters[kind] = [2]prometheus.Counter{c.lookups.WithLabelValues(kind, "cache"), c.lookups.WithLabelValues(kind, "postgres")}
	}
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
	clear(c.bots)
}

// cached answers one handshake question: from memory when get finds a fresh entry, otherwise by
// read, once for every concurrent caller with the same key at the same generation (a handshake
// that starts after an announcement never joins a look-up that began before it). The look-up
// looks at the cache again first, and fills it before it ends, so a caller that missed just
// before a fill finds the entry instead of asking again. put keeps a result read at a
// generation unless an announcement came since. The read runs apart from the caller's context
// (a leader whose client hung up must not fail the others), bounded by lookupTimeout.
// Look-ups count as source "postgres" when they read, "cache" otherwise.
func cached[E any](ctx context.Context, c *handshakeCache, kind, key string, get func(now time.Time) (E, bool),
	read func(ctx context.Context, now time.Time) (E, error), put func(gen uint64, e E)) (E, error) {
	hits, misses := c.counters[kind][0], c.counters[kind][1]
	c.mu.Lock()
	gen, use := c.beginLocked()
	e, hit := get(time.Now())
	c.mu.Unlock()
	if use && hit {
		hits.Inc()
		return e, nil
	}
	if !use {
		misses.Inc()
		return read(ctx, time.Now())
	}
	type result struct {
		e    E
		read bool
	}
	ran := false
	v, err, _ := c.flights.Do(strconv.FormatUint(gen, 10)+"|"+kind+"|"+key, func() (any, error) {
		ran = true
		now := time.Now()
		c.mu.Lock()
		e, hit := get(now)
		c.mu.Unlock()
		if hit {
			return result{e: e}, nil
		}
		misses.Inc()
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		e, err := read(lctx, now)
		if err == nil {
			put(gen, e)
		}
		return result{e: e, read: true}, err
	})
	res, _ := v.(result)
	if !ran || !res.read {
		hits.Inc()
	}
	return res.e, err
}

// lookupTimeout bounds a shared handshake look-up.
const lookupTimeout = 10 * time.Second

// session resolves a raw session token, from memory when it can.
func (c *handshakeCache) session(ctx context.Context, store *persist.Store, raw string) (persist.Session, persist.User, error) {
	hash := string(persist.HashSecret(raw))
	e, err := cached(ctx, c, "session", hash, func(now time.Time) (sessionEntry, bool) {
		e, ok := c.sessions[hash]
		// A session's own expiry is checked here too, by the store's clock: it ends with no
		// announcement.
		return e, ok && now.Sub(e.at) < c.ttl && e.session.ExpiresAt.After(store.Now())
	}, func(ctx context.Context, now time.Time) (sessionEntry, error) {
		return persist.ReadV(ctx, store, func(tx *persist.Reader) (sessionEntry, error) {
			s, u, err := tx.SessionResolve(ctx, raw)
			return sessionEntry{at: now, session: s, user: u}, err
		})
	}, func(gen uint64, e sessionEntry) { c.fillSession(gen, hash, e) })
	return e.session, e.user, err
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
	e, err := cached(ctx, c, "membership", workspaceID+"|"+actor.UserID, func(now time.Time) (viewerEntry, bool) {
		e, ok := c.viewers[key]
		return e, ok && now.Sub(e.at) < c.ttl
	}, readViewer(store, actor, workspaceID), func(gen uint64, e viewerEntry) { c.fillViewer(gen, key, e) })
	if err != nil {
		return v, time.Now(), err
	}
	return e.viewer, e.at, nil
}

func readViewer(store *persist.Store, actor persist.Actor, workspaceID string) func(context.Context, time.Time) (viewerEntry, error) {
	return func(ctx context.Context, now time.Time) (viewerEntry, error) {
		return persist.ReadV(ctx, store, func(tx *persist.Reader) (viewerEntry, error) {
			v, err := tx.ViewerFor(ctx, actor, workspaceID)
			return viewerEntry{at: now, viewer: v}, err
		})
	}
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

// botViewer checks that a bot token's actor may read a workspace, from memory when it can.
func (c *handshakeCache) botViewer(ctx context.Context, store *persist.Store, actor persist.Actor, workspaceID string) (
	v persist.Viewer, checked time.Time, err error) {
	key := botViewerKey{workspaceID, actor.UserID, actor.BoundBy(), actor.TokenWorkspaceID}
	e, err := cached(ctx, c, "membership", workspaceID+"|"+actor.UserID+"|"+actor.BoundBy()+"|"+actor.TokenWorkspaceID,
		func(now time.Time) (viewerEntry, bool) {
			e, ok := c.bots[key]
			return e, ok && now.Sub(e.at) < c.ttl
		}, readViewer(store, actor, workspaceID), func(gen uint64, e viewerEntry) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.gen != gen {
				return
			}
			evictLocked(c.bots, c.max, func(old viewerEntry) bool { return e.at.Sub(old.at) >= c.ttl }, nil)
			c.bots[key] = e
		})
	if err != nil {
		return v, time.Now(), err
	}
	return e.viewer, e.at, nil
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
		// A bot stands on its owner's (or its token issuer's) membership. Bots are few: a scan.
		for k := range c.bots {
			if k.workspaceID == r.WorkspaceID && (k.botID == r.UserID || k.ownerID == r.UserID) {
				delete(c.bots, k)
			}
		}
	case r.WorkspaceID != "":
		for k := range c.viewers {
			if k.workspaceID == r.WorkspaceID {
				delete(c.viewers, k)
			}
		}
		for k := range c.bots {
			if k.workspaceID == r.WorkspaceID {
				delete(c.bots, k)
			}
		}
	}
}

// revokeAll is revoke for each of a commit's revocations.
func (c *handshakeCache) revokeAll(rs []persist.Revocation) {
	for _, r := range rs {
		c.revoke(r)
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

// viewerFor is the handshake's membership check, from the cache for people and bot tokens alike.
// checked is when Postgres last vouched for it.
func (h *Hub) viewerFor(ctx context.Context, j Join) (persist.Viewer, time.Time, error) {
	if j.TokenID == "" {
		return h.handshake.viewer(ctx, h.store, j.Actor, j.WorkspaceID)
	}
	return h.handshake.botViewer(ctx, h.store, j.Actor, j.WorkspaceID)
}

// ResolveSession is the session look-up of API requests and WebSocket handshakes (persist's
// SessionResolve), answered from memory while no revocation has ended the session (this
// replica's commits drop entries at once, other replicas' announcements as they arrive) and the
// session has not expired. The user comes with it as it was read: what
// may change about a person without a revocation (name, handle, settings) is to be read afresh
// by whoever shows it. Codes: unauthenticated.
func (h *Hub) ResolveSession(ctx context.Context, raw string) (persist.Session, persist.User, error) {
	return h.handshake.session(ctx, h.store, raw)
}
