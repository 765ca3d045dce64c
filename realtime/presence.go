package realtime

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/streams"
)

// presenceBatch caps the people one flush writes, so a storm of handshakes is written in a few
// statements of bounded size rather than one per socket or one huge one.
const presenceBatch = 4096

// presence derives who is online from this replica's open sockets (docs/realtime.md,
// "Presence"). Sockets count in memory; a flush every PresenceFlush writes only the people
// whose standing on this replica changed since the last one, so a person who closes and
// reopens a tab within it costs nothing, and a storm of handshakes costs a few batched
// statements. The transitions the flush reports (a person's first socket on any replica, their
// last one anywhere) go to the workspace's sockets on every replica as presence.changed, over
// core NATS: a workspace nobody has a socket in subscribes to nothing, and pays nothing.
type presence struct {
	store   *persist.Store
	nc      *nats.Conn
	logger  *slog.Logger
	replica string
	ttl     time.Duration
	every   time.Duration
	changes prometheus.Counter

	mu      sync.Mutex
	stopped bool
	held    map[persist.PresenceKey]int  // open sockets per person and workspace
	written map[persist.PresenceKey]bool // recorded in Postgres as held here
	dirty   map[persist.PresenceKey]struct{}
}

func newPresence(cfg Config) *presence {
	return &presence{store: cfg.Store, nc: cfg.NATS, logger: cfg.Logger.With("component", "presence"),
		replica: persist.NewID("rep_", time.Now()), ttl: cfg.PresenceTTL, every: cfg.PresenceFlush,
		held: map[persist.PresenceKey]int{}, written: map[persist.PresenceKey]bool{}, dirty: map[persist.PresenceKey]struct{}{},
		changes: prometheus.NewCounter(prometheus.CounterOpts{Name: "natter_presence_changes_total",
			Help: "Presence transitions (online or offline) this replica published."})}
}

func (p *presence) join(k persist.PresenceKey) {
	p.mu.Lock()
	if p.held[k]++; p.held[k] == 1 {
		p.dirty[k] = struct{}{}
	}
	p.mu.Unlock()
}

// leave drops a socket. Once the hub stops, closing sockets changes nothing: the replica's rows
// stay until its registration expires, so a restart whose clients reconnect within that time
// (here or on another replica) announces nobody offline and nobody online again.
func (p *presence) leave(k persist.PresenceKey) {
	p.mu.Lock()
	if !p.stopped {
		if p.held[k]--; p.held[k] <= 0 {
			delete(p.held, k)
			p.dirty[k] = struct{}{}
		}
	}
	p.mu.Unlock()
}

// run flushes every PresenceFlush, renews the registration and sweeps expired replicas every
// third of PresenceTTL, until ctx ends; then it stops counting and writes nothing more.
func (p *presence) run(ctx context.Context) {
	t := time.NewTicker(p.every)
	defer t.Stop()
	renew := max(p.ttl/3, p.every)
	var renewed, swept time.Time
	for {
		select {
		case <-ctx.Done():
			p.mu.Lock()
			p.stopped = true
			p.mu.Unlock()
			return
		case now := <-t.C:
			if p.flush(ctx, now.Sub(renewed) >= renew) {
				renewed = now
			}
			if now.Sub(swept) >= renew {
				swept = now
				p.sweep(ctx)
			}
		}
	}
}

// flush writes what changed (and renews the registration when due or when there is anything to
// write); it reports whether the registration was renewed.
func (p *presence) flush(ctx context.Context, due bool) bool {
	p.mu.Lock()
	var add, remove []persist.PresenceKey
	for k := range p.dirty {
		if len(add)+len(remove) == presenceBatch {
			break
		}
		delete(p.dirty, k)
		switch want := p.held[k] > 0; {
		case want && !p.written[k]:
			add = append(add, k)
		case !want && p.written[k]:
			remove = append(remove, k)
		}
	}
	p.mu.Unlock()
	if !due && len(add) == 0 && len(remove) == 0 {
		return false
	}
	changes, lost, err := p.store.PresenceFlush(ctx, p.replica, p.ttl, add, remove)
	p.mu.Lock()
	if err != nil {
		for _, k := range append(add, remove...) {
			p.dirty[k] = struct{}{}
		}
		p.mu.Unlock()
		if ctx.Err() == nil {
			p.logger.Warn("presence flush failed", "error", err)
		}
		return false
	}
	if lost {
		// Another replica found this one expired and took its rows: everyone held is written
		// again (those of this flush's adds are there already, so the next flush skips them).
		clear(p.written)
		for k := range p.held {
			p.dirty[k] = struct{}{}
		}
	}
	// A key marked again while the statement ran (its last socket closed, or a new first one
	// opened) stays marked: the next flush writes where it stands now.
	for _, k := range add {
		p.written[k] = true
	}
	for _, k := range remove {
		delete(p.written, k)
	}
	p.mu.Unlock()
	p.publish(changes)
	return true
}

// sweep expires replicas that stopped renewing and announces who went offline with them.
func (p *presence) sweep(ctx context.Context) {
	changes, err := p.store.PresenceSweep(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.logger.Warn("presence sweep failed", "error", err)
		}
		return
	}
	p.publish(changes)
}

// presencePayload is presence.changed as the server derives it: workspace-wide (no channel or
// conversation), user_id as in every presence.changed, online and status for the standing, and
// version to order two changes of one person.
type presencePayload struct {
	UserID  string `json:"user_id"`
	Online  bool   `json:"online"`
	Status  string `json:"status"`
	Version int64  `json:"version"`
}

// presenceChanges is the payload of a presence.changed that carries several people's changes.
type presenceChanges struct {
	Changes []presencePayload `json:"changes"`
}

// presenceEventChanges caps the changes of one presence.changed event (a frame of about 24 KB).
const presenceEventChanges = 256

// publish announces one flush's (or sweep's) transitions: one event per workspace, whose
// payload is the person's change when only one changed there and {changes: [...]} when several
// did, up to presenceEventChanges each. Every socket that asked for presence gets every change
// of its workspace, so a storm of N people signing in was N events to up to N sockets, N²
// frames; it is now a few frames per socket per flush (docs/realtime.md, "Presence").
func (p *presence) publish(changes []persist.PresenceChange) {
	now := time.Now().UTC()
	byWorkspace := map[string][]presencePayload{}
	var order []string
	for _, c := range changes {
		status := "offline"
		if c.Online {
			status = "online"
		}
		if _, ok := byWorkspace[c.WorkspaceID]; !ok {
			order = append(order, c.WorkspaceID)
		}
		byWorkspace[c.WorkspaceID] = append(byWorkspace[c.WorkspaceID],
			presencePayload{UserID: c.UserID, Online: c.Online, Status: status, Version: c.Version})
	}
	for _, ws := range order {
		for list := byWorkspace[ws]; len(list) > 0; {
			n := min(len(list), presenceEventChanges)
			p.publishEvent(ws, list[:n], now)
			list = list[n:]
		}
	}
}

func (p *presence) publishEvent(workspaceID string, list []presencePayload, now time.Time) {
	ev := persist.Event{ID: persist.NewID(persist.PrefixEvent, now), Type: persist.EphemeralPresenceChanged,
		WorkspaceID: workspaceID, CreatedAt: now}
	if len(list) == 1 {
		ev.ActorID = list[0].UserID
		ev.Payload, _ = json.Marshal(list[0])
	} else {
		ev.Payload, _ = json.Marshal(presenceChanges{Changes: list})
	}
	body, _ := ev.MarshalJSON()
	if err := p.nc.Publish(streams.PresenceSubject(workspaceID), body); err != nil {
		p.logger.Warn("presence publish failed", "error", err)
		return
	}
	p.changes.Add(float64(len(list)))
}

// presenceKey is whom a socket makes online: its person (or bot) in its workspace.
func (s *socket) presenceKey() persist.PresenceKey {
	return persist.PresenceKey{WorkspaceID: s.workspaceID, UserID: s.actor.UserID}
}
