package streams

import (
	"slices"
	"sync"

	"github.com/natterchat/natter/persist"
)

// handoffLimit bounds the events waiting in a relay's hand-off, all workspaces together (about
// 1.5 KB each): past it offers are dropped and the relay reads those events from the log.
const handoffLimit = 8192

// handoff keeps the events this process's group commits handed the relay
// (persist.Store.HandOffEvents) until the relay's next pass over their workspace, which then
// publishes them without reading them back from Postgres. Only workspaces the relay has passed
// over since it last lost its shards are kept, so a workspace another replica relays fills
// nothing. A pass takes them only as the exact continuation of what its stream holds;
// anything else (a gap, events of other transactions or replicas) it reads from the log as
// before, so what is published is the same either way.
type handoff struct {
	mu    sync.Mutex
	byWS  map[string][]persist.Event // by workspace, ascending cursor, none at or before what was taken
	total int
}

func newHandoff() *handoff { return &handoff{byWS: map[string][]persist.Event{}} }

// offer keeps the events of workspaces being relayed here. Commits of one workspace end in
// cursor order but their hand-offs may arrive out of it, so each is put in its place.
func (h *handoff) offer(events []persist.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range events {
		buf, ok := h.byWS[e.WorkspaceID]
		if !ok || h.total >= handoffLimit {
			continue
		}
		i := len(buf)
		for i > 0 && buf[i-1].Cursor > e.Cursor {
			i--
		}
		if i > 0 && buf[i-1].Cursor == e.Cursor {
			continue
		}
		h.byWS[e.WorkspaceID] = slices.Insert(buf, i, e)
		h.total++
	}
}

// take returns up to n events following cursor after, when the hand-off holds after+1 and what
// follows it without a gap; nil otherwise. Events at or before after are dropped either way, and
// from now on the workspace's hand-offs are kept.
func (h *handoff) take(workspaceID string, after int64, n int) []persist.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	buf := h.byWS[workspaceID]
	k := 0
	for k < len(buf) && buf[k].Cursor <= after {
		k++
	}
	m := 0
	for k+m < len(buf) && m < n && buf[k+m].Cursor == after+1+int64(m) {
		m++
	}
	out := slices.Clone(buf[k : k+m])
	rest := buf[k+m:]
	if len(rest) == 0 {
		rest = nil
	}
	h.byWS[workspaceID] = rest
	h.total -= k + m
	return out
}

// forget drops a workspace's events and stops keeping them, until its next take.
func (h *handoff) forget(workspaceID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.total -= len(h.byWS[workspaceID])
	delete(h.byWS, workspaceID)
}

// reset drops everything, as when the relay loses its shards.
func (h *handoff) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.byWS)
	h.total = 0
}
