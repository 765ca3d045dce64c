package realtime

import (
	"context"
	"sync"
	"time"

	"github.com/natterchat/natter/persist"
)

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
