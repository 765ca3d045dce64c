package realtime

import (
	"context"
	"sync"
	"time"

	"github.com/natterchat/natter/persist"
)

// A socket's check (its session live, its membership and role) is good for RevalidateInterval.
// A person's sockets are checked in bulk by the idle timer a little before that (bulkAhead): one
// statement for up to bulkBatch distinct standings, run apart from the workers, so a hub of
// 20,000 members' sockets costs a statement a second, not 1,300 of them, and no worker waits on
// Postgres for it. A delivery to a socket whose check has gone stale all the same (the bulk check
// late or failing) still checks that socket first, alone (socket.flush), and bots' sockets, whose
// standing rests on their token and owner, are checked one at a time as before.

// checkCache shares one revalidation among the sockets of a session for a moment, so a burst of
// deliveries to many sockets of one session costs one query.
type checkCache struct {
	share   time.Duration // how long a result is shared: checkShare, or less when checks are due sooner
	mu      sync.Mutex
	entries map[string]checkEntry
}

type checkEntry struct {
	at     time.Time
	viewer persist.Viewer
	err    error
}

const checkShare = time.Second

func (c *checkCache) get(key string, now time.Time) (checkEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	return e, ok && now.Sub(e.at) < c.share
}

func (c *checkCache) put(key string, e checkEntry) {
	c.mu.Lock()
	c.entries[key] = e
	c.mu.Unlock()
}

func (c *checkCache) clear() {
	c.mu.Lock()
	clear(c.entries)
	c.mu.Unlock()
}

func (c *checkCache) expire(now time.Time) {
	c.mu.Lock()
	for k, e := range c.entries {
		if now.Sub(e.at) >= c.share {
			delete(c.entries, k)
		}
	}
	c.mu.Unlock()
}

// revalidate checks a socket's actor against the store: the session or the bot token (when there
// is one) and the membership, which may have changed role.
func (h *Hub) revalidate(ctx context.Context, s *socket) (persist.Viewer, error) {
	key := s.sessionID + "|" + s.tokenID + "|" + s.actor.UserID + "|" + s.workspaceID
	now := time.Now()
	if e, ok := h.checks.get(key, now); ok {
		return e.viewer, e.err
	}
	h.metrics.checks.WithLabelValues("single").Inc()
	v, err := persist.ReadV(ctx, h.store, func(tx *persist.Reader) (persist.Viewer, error) {
		if s.sessionID != "" {
			live, err := tx.SessionLive(ctx, s.sessionID)
			if err != nil {
				return persist.Viewer{}, err
			}
			if !live {
				return persist.Viewer{}, persist.Errorf(persist.CodeUnauthenticated, "the session has ended")
			}
		}
		if s.tokenID != "" {
			live, err := tx.BotTokenLive(ctx, s.tokenID)
			if err != nil {
				return persist.Viewer{}, err
			}
			if !live {
				return persist.Viewer{}, persist.Errorf(persist.CodeUnauthenticated, "the bot token was revoked")
			}
		}
		return tx.ViewerFor(ctx, s.actor, s.workspaceID)
	})
	if err == nil || persist.IsRefusal(err) {
		h.checks.put(key, checkEntry{at: now, viewer: v, err: err})
	}
	return v, err
}

// bulkBatch is how many distinct standings one bulk statement checks at most.
const bulkBatch = 2000

// bulkAhead is how long before its check goes stale a socket is checked in bulk: room for a
// sweep tick and the statement, so deliveries rarely find a stale check.
func (h *Hub) bulkAhead() time.Duration {
	return min(h.cfg.RevalidateInterval/4, 2*h.cfg.SweepInterval+time.Second)
}

// checkedInBulk reports whether the socket's standing is a person's session and membership,
// which persist's Standings checks in bulk.
func (s *socket) checkedInBulk() bool {
	return s.sessionID != "" && s.tokenID == "" && s.actor.BoundBy() == "" && s.actor.TokenWorkspaceID == ""
}

// dueCheck is a socket due for a bulk check, with the announcements it had seen when it was taken.
type dueCheck struct {
	s    *socket
	seen uint64
}

// revalidateBulk checks the due sockets' standings, bulkBatch distinct ones to a statement.
func (h *Hub) revalidateBulk(ctx context.Context, due []dueCheck) {
	by := map[persist.Standing][]dueCheck{}
	var keys []persist.Standing
	for _, d := range due {
		k := persist.Standing{SessionID: d.s.sessionID, UserID: d.s.actor.UserID, WorkspaceID: d.s.workspaceID}
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], d)
	}
	for len(keys) > 0 && ctx.Err() == nil {
		batch := keys[:min(len(keys), bulkBatch)]
		keys = keys[len(batch):]
		started := time.Now()
		qctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		results, err := persist.ReadV(qctx, h.store, func(tx *persist.Reader) ([]persist.StandingResult, error) {
			return tx.Standings(qctx, batch)
		})
		cancel()
		if ctx.Err() != nil {
			return // the hub is stopping
		}
		h.metrics.checks.WithLabelValues("bulk").Inc()
		if err != nil {
			h.logger.Warn("socket revalidation failed", "sockets", len(batch), "error", err)
		}
		for i, k := range batch {
			r := persist.StandingResult{Err: err}
			if err == nil {
				r = results[i]
			}
			for _, d := range by[k] {
				d.s.applyCheck(d.seen, started, r)
			}
		}
	}
}

// applyCheck applies a bulk check that started at started, when the socket had seen seen
// announcements. A refusal closes the socket with 1008. Otherwise the verdict stands only if
// no announcement came since (one that did asked for a check of its own, which decides); an
// outage keeps the socket and its viewer, as a single check does.
func (s *socket) applyCheck(seen uint64, started time.Time, r persist.StandingResult) {
	if persist.IsRefusal(r.Err) {
		s.closeFor(r.Err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.announced != seen || s.state >= stateClosing {
		return
	}
	if r.Err == nil {
		s.viewer = r.Viewer
	}
	if started.After(s.checkedAt) {
		s.checkedAt = started
	}
	s.checked = seen
	s.releaseHeldLocked()
}

// staleLocked reports whether the socket's last check is older than the revalidation interval.
func (s *socket) staleLocked() bool {
	return s.revalidates() && time.Since(s.checkedAt) > s.hub.cfg.RevalidateInterval
}

// revalidates reports whether the socket's credentials can end while it is open: a session or a
// bot token. (Membership is checked with them.)
func (s *socket) revalidates() bool { return s.sessionID != "" || s.tokenID != "" }

// uses reports whether the socket rests on what r revoked: its session, its bot token, its (or
// its user bot owner's, or its service bot token issuer's) membership of the socket's workspace, or the workspace itself. Set once
// at accept, read freely.
func (s *socket) uses(r persist.Revocation) bool {
	switch {
	case r.SessionID != "":
		return s.sessionID == r.SessionID
	case r.TokenID != "":
		return s.tokenID == r.TokenID
	case r.WorkspaceID != s.workspaceID:
		return false
	default:
		return r.UserID == "" || r.UserID == s.actor.UserID || (s.actor.BoundBy() != "" && r.UserID == s.actor.BoundBy())
	}
}

// check revalidates the socket's actor; a revoked session or membership closes it with 1008.
// A database outage keeps the socket and tries again later.
func (s *socket) check(ctx context.Context) bool {
	s.mu.Lock()
	seen := s.announced
	s.mu.Unlock()
	v, err := s.hub.revalidate(ctx, s)
	if persist.IsRefusal(err) && ctx.Err() == nil { // an outage (or the hub stopping) is no verdict: keep the socket
		s.closeFor(err)
		return false
	}
	s.mu.Lock()
	if err == nil {
		s.viewer = v
	} else {
		s.hub.logger.Warn("socket revalidation failed", "workspace_id", s.workspaceID, "error", err)
	}
	s.checkedAt = time.Now()
	if s.checked = seen; s.checked == s.announced {
		s.releaseHeldLocked()
	}
	s.mu.Unlock()
	return true
}

// releaseHeldLocked queues the live events held for a check that the viewer of now may see. (An
// outage keeps the former viewer: events are not held past a failed check.)
func (s *socket) releaseHeldLocked() {
	held := s.held
	s.held, s.heldBytes = nil, 0
	for _, ev := range held {
		if ev.visibleTo(s.viewer) && !s.queueLocked(ev.frame) {
			return
		}
	}
}
