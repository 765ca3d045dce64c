package realtime

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/streams"
)

// liveEvent is one event on its way to the sockets of a workspace: its frame is compiled once
// and shared by every socket.
type liveEvent struct {
	cursor int64 // 0 for ephemeral events
	scope  persist.EventScope
	facts  *persist.VisibilityFacts
	frame  []byte
}

func (e *liveEvent) visibleTo(v persist.Viewer) bool { return e.facts.Visible(v, e.scope) }

// feed is a workspace's live source on this node: one follower of its stream (streams.Follow,
// an ordered consumer from the stream's end) and one subscription to its ephemeral subjects,
// fanned out to the local sockets.
type feed struct {
	hub         *Hub
	workspaceID string
	startMu     sync.Mutex // serialises tryStart and stop, which talk to NATS
	// dispatchMu serialises dispatch: the stream's follower and the relay's previews both
	// hand events on, and each must be learned and fanned out once, in cursor order.
	dispatchMu sync.Mutex

	mu        sync.Mutex
	sockets   map[*socket]int // index into list
	list      []*socket
	presence  int // sockets in list that asked for presence.changed (Join.Presence)
	idleSince time.Time
	// liveFrom is the first cursor the consumer delivers (0: not started); a socket goes live
	// only once its backfill reached liveFrom-1, so nothing falls between the two.
	liveFrom int64
	last     int64 // the last cursor dispatched
	eph      *nats.Subscription
	pres     *nats.Subscription // presence.changed, for the sockets that asked (Join.Presence)
	self     *nats.Subscription // one person's own channel states, for their sockets (SelfSubject)
	// preview is the relay's previews of a waking workspace's first events (onPreview).
	preview *nats.Subscription
	stopped bool
	// following stops the follower, which closes followed once it returned; nil before start.
	following context.CancelFunc
	followed  chan struct{}

	// tail holds the last events dispatched (at most tailEvents), in cursor order without a
	// gap: a socket resuming from a cursor they cover catches up from here, not from Postgres.
	tail []*liveEvent
	// history holds blocks of the stream read for sockets resuming from before the tail.
	history history

	factsMu sync.Mutex // guards the facts below; never held across a query
	guestCh string
	guestOK bool
	dms     map[string][]string
	// private holds the members of the private channels seen so far, followed through
	// channel.member_added and channel.member_removed as they are dispatched. A member list is
	// replaced, never changed in place: the facts of events already dispatched share it.
	private map[string][]string
}

func newFeed(h *Hub, workspaceID string) *feed {
	return &feed{hub: h, workspaceID: workspaceID, sockets: map[*socket]int{}, dms: map[string][]string{},
		private: map[string][]string{}}
}

// attach adds a socket that is about to catch up; live events reach its pending list until then.
func (f *feed) attach(s *socket) {
	f.mu.Lock()
	f.sockets[s] = len(f.list)
	f.list = append(f.list, s)
	if s.presence {
		f.presence++
	}
	s.feed = f
	f.mu.Unlock()
}

func (f *feed) detach(s *socket) {
	f.mu.Lock()
	if i, ok := f.sockets[s]; ok {
		last := f.list[len(f.list)-1]
		f.list[i], f.sockets[last] = last, i
		f.list[len(f.list)-1] = nil
		f.list = f.list[:len(f.list)-1]
		delete(f.sockets, s)
		if s.presence {
			f.presence--
		}
	}
	if len(f.sockets) == 0 {
		f.idleSince = time.Now()
	}
	f.mu.Unlock()
}

func (f *feed) idleFor(now time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sockets) > 0 {
		return 0
	}
	return now.Sub(f.idleSince)
}

// liveStart is where live delivery starts, 0 when the consumer is not running yet.
func (f *feed) liveStart() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.liveFrom
}

// tryStart starts following the stream from its end, once: the follower waits for a stream the
// relay has not created yet, so the sockets go live as soon as the first event is relayed. A
// failed ephemeral subscription is tried again at the next sweep.
func (f *feed) tryStart() {
	f.startMu.Lock()
	defer f.startMu.Unlock()
	f.mu.Lock()
	started := f.following != nil || f.stopped
	f.mu.Unlock()
	if started {
		return
	}
	h := f.hub
	if f.eph == nil {
		sub, err := h.cfg.NATS.Subscribe(streams.EphemeralSubjects(f.workspaceID), f.onEphemeral)
		if err != nil {
			h.logger.Warn("ephemeral subscription failed", "workspace_id", f.workspaceID, "error", err)
			return
		}
		f.eph = sub
	}
	if f.pres == nil {
		sub, err := h.cfg.NATS.Subscribe(streams.PresenceSubject(f.workspaceID), f.onPresence)
		if err != nil {
			h.logger.Warn("presence subscription failed", "workspace_id", f.workspaceID, "error", err)
			return
		}
		f.pres = sub
	}
	if f.self == nil {
		sub, err := h.cfg.NATS.Subscribe(streams.SelfSubjects(f.workspaceID), f.onSelf)
		if err != nil {
			h.logger.Warn("self subscription failed", "workspace_id", f.workspaceID, "error", err)
			return
		}
		f.self = sub
	}
	if f.preview == nil {
		sub, err := h.cfg.NATS.Subscribe(streams.PreviewSubject(f.workspaceID), f.onPreview)
		if err != nil {
			h.logger.Warn("preview subscription failed", "workspace_id", f.workspaceID, "error", err)
			return
		}
		f.preview = sub
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	f.mu.Lock()
	f.following, f.followed = cancel, done
	f.mu.Unlock()
	go func() {
		defer close(done)
		f.lookUpFacts("", "") // the guest channel, before the first event needs it
		err := streams.Follow(ctx, streams.FollowConfig{NATS: h.cfg.NATS, WorkspaceID: f.workspaceID,
			Logger: h.logger, Start: f.start, OnLive: f.onLive, OnMissing: f.liveWithoutStream, Handle: f.onEvent})
		if err != nil {
			h.logger.Error("feed cannot follow the stream", "workspace_id", f.workspaceID, "error", err)
		}
	}()
}

// start is where the stream's consumer begins: at the stream's end, or, once the feed went
// live on the relay's previews, after the last event it dispatched.
func (f *feed) start(context.Context) (streams.Start, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.liveFrom != 0 {
		return streams.Start{After: f.last}, nil
	}
	return streams.Start{AtEnd: true}, nil
}

// onLive records where live delivery starts and resumes the sockets that finished their
// backfill meanwhile. A follower that starts again (a rebuilt stream) resumes after the last
// cursor it handed on, so only the first start counts.
func (f *feed) onLive(first int64) {
	f.mu.Lock()
	if f.liveFrom > 0 || f.stopped {
		f.mu.Unlock()
		return
	}
	f.liveFrom, f.last = first, first-1
	waiting := append([]*socket(nil), f.list...)
	f.mu.Unlock()
	for _, s := range waiting {
		s.feedStarted()
	}
}

// liveWithoutStream starts live delivery of a workspace that has no stream (the relay retired
// it, or no event was ever relayed) after the workspace's relayed cursor: Postgres holds every
// event up to it, and whatever follows comes as the relay's previews or in the stream once it
// exists, where the consumer begins after the last event dispatched (start). Without it the
// sockets of a dormant workspace stayed in catch-up until its next event, and its ephemeral
// events (typing, presence) waited with them. A relayed cursor read stale is no loss: the
// stream holds what was relayed since, and the consumer reads it from there.
func (f *feed) liveWithoutStream(ctx context.Context) {
	if f.liveStart() != 0 {
		return
	}
	st, err := persist.ReadV(ctx, f.hub.store, func(tx *persist.Reader) (persist.RelayState, error) {
		return tx.RelayStateGet(ctx, f.workspaceID)
	})
	if err != nil {
		if ctx.Err() == nil {
			f.hub.logger.Warn("feed cannot read its workspace's relayed cursor", "workspace_id", f.workspaceID, "error", err)
		}
		return
	}
	// Under dispatchMu: a preview dispatched meanwhile started live delivery already.
	f.dispatchMu.Lock()
	defer f.dispatchMu.Unlock()
	f.onLive(st.Relayed + 1)
}

func (f *feed) stop() {
	f.startMu.Lock()
	defer f.startMu.Unlock()
	f.mu.Lock()
	f.stopped = true
	cancel, done, eph, pres, self, preview := f.following, f.followed, f.eph, f.pres, f.self, f.preview
	f.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	for _, sub := range []*nats.Subscription{eph, pres, self, preview} {
		if sub != nil {
			_ = sub.Unsubscribe()
		}
	}
}

// onEvent is the consumer's callback, called in stream order.
func (f *feed) onEvent(_ context.Context, m streams.Msg) { f.dispatch(m.Event, false) }

// onPreview takes one of the first events of a waking workspace from the relay, before its
// stream exists (streams.PreviewSubject). The first one starts live delivery, as the stream's
// start would (the sockets catch up from Postgres to the event before it); later ones are
// taken only as the exact continuation of what was dispatched, and the stream's consumer then
// begins after the last of them (start). A preview lost or out of turn costs only the wait
// for the stream, which delivers every event.
func (f *feed) onPreview(m *nats.Msg) {
	ev, err := streams.DecodePreview(f.workspaceID, m)
	if err != nil {
		f.hub.logger.Warn("feed drops a preview it cannot read", "workspace_id", f.workspaceID, "error", err)
		return
	}
	f.dispatch(ev, true)
}

// dispatch fans an event out to the sockets, once per cursor and in cursor order: from the
// stream, a cursor past the next one is a gap (a prune or a rebuild), after which the sockets
// catch up again; a preview is never taken past a gap.
func (f *feed) dispatch(m streams.Event, preview bool) {
	f.dispatchMu.Lock()
	defer f.dispatchMu.Unlock()
	cursor := m.Cursor
	f.mu.Lock()
	live, last := f.liveFrom != 0, f.last
	f.mu.Unlock()
	if live && (cursor <= last || (preview && cursor != last+1)) {
		return // already dispatched (a consumer reset replays), or a preview out of turn
	}
	f.learn(m.Type, m.Envelope)
	ev := &liveEvent{cursor: cursor, scope: m.Scope, facts: f.factsFor(m.Scope, m.Header), frame: textFrame(m.Envelope)}
	var waiting []*socket
	f.mu.Lock()
	if preview && f.stopped {
		f.mu.Unlock()
		return
	}
	if preview && f.liveFrom == 0 {
		f.liveFrom, f.last = cursor, cursor-1
		waiting = append(waiting, f.list...)
	}
	if cursor <= f.last || (preview && cursor != f.last+1) {
		f.mu.Unlock()
		return
	}
	gap := cursor != f.last+1
	if gap {
		f.history.clear()
	}
	f.last = cursor
	f.keepLocked(ev, gap)
	f.fanOutLocked(func(s *socket) {
		if gap {
			// The stream skipped cursors (a prune or rebuild): sockets catch up again.
			s.resync()
		}
		s.deliver(ev)
	})
	f.hub.metrics.frames.Add(float64(len(f.list)))
	f.mu.Unlock()
	// As onLive: the sockets that finished their backfill meanwhile resume.
	for _, s := range waiting {
		s.feedStarted()
	}
}

// tailEvents bounds the events a feed keeps for catch-up (their frames are shared with the
// sockets' queues, so the cost is the frames of the last tailEvents events of the workspace).
const tailEvents = 2048

// keepLocked adds a dispatched event to the tail; after a gap the tail starts over. Caller
// holds f.mu.
func (f *feed) keepLocked(ev *liveEvent, gap bool) {
	if gap {
		clear(f.tail)
		f.tail = f.tail[:0]
	}
	if len(f.tail) == 2*tailEvents {
		n := copy(f.tail, f.tail[tailEvents:])
		clear(f.tail[n:])
		f.tail = f.tail[:n]
	}
	f.tail = append(f.tail, ev)
}

// tailAfter is catch-up from memory: the frames of the events after cursor after that viewer
// may see, at least one event's and at most maxBytes, with the last cursor read and whether
// more follow. ok is false when the tail does not hold every event after after (the feed is
// not live, the cursor is older than the tail, or it is not one this feed has dispatched).
func (f *feed) tailAfter(after int64, maxBytes int, viewer persist.Viewer) (frames [][]byte, size int, pos int64, more, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tail := f.tail
	if f.liveFrom != 0 && after == f.last {
		return nil, 0, after, false, true // nothing dispatched after it (the tail may be empty)
	}
	if f.liveFrom == 0 || len(tail) == 0 || after+1 < tail[0].cursor || after > f.last {
		return nil, 0, 0, false, false
	}
	pos = after
	for _, ev := range tail[after+1-tail[0].cursor:] {
		if ev.visibleTo(viewer) {
			if len(frames) > 0 && size+len(ev.frame) > maxBytes {
				return frames, size, pos, true, true
			}
			frames, size = append(frames, ev.frame), size+len(ev.frame)
		}
		pos = ev.cursor
	}
	return frames, size, pos, false, true
}

// fanOutSlice is how many sockets one fan-out goroutine takes at least.
const fanOutSlice = 1024

// fanOutLocked calls fn for every socket, split over up to GOMAXPROCS goroutines when there are
// many: the writes of a large workspace's fan-out are the hot path. It returns when all are
// done, so events reach each socket in order. Caller holds f.mu.
func (f *feed) fanOutLocked(fn func(s *socket)) {
	parts := min(runtime.GOMAXPROCS(0), (len(f.list)+fanOutSlice-1)/fanOutSlice)
	if parts <= 1 {
		for _, s := range f.list {
			fn(s)
		}
		return
	}
	var wg sync.WaitGroup
	size := (len(f.list) + parts - 1) / parts
	for start := 0; start < len(f.list); start += size {
		part := f.list[start:min(start+size, len(f.list))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, s := range part {
				fn(s)
			}
		}()
	}
	wg.Wait()
}

// onEphemeral delivers an ephemeral event to the live sockets that may see it. Only the
// ephemeral types travel here (EphemeralAuthorize), and the message teaches the feed nothing: its
// visibility facts come from the feed's own or Postgres, never from what was published (the
// relay's header does not come with ephemeral events), so nothing published here can widen who
// sees a conversation or change the guest channel.
func (f *feed) onEphemeral(m *nats.Msg) {
	_, scope, typ, ok := streams.ParseSubject(m.Subject)
	if !ok || !persist.IsEphemeralType(typ) {
		return
	}
	ev := &liveEvent{scope: scope, facts: f.factsFor(scope, nil), frame: textFrame(m.Data)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fanOutLocked(func(s *socket) { s.deliver(ev) })
}

// onPresence delivers a presence.changed to the live sockets that asked for presence and may
// see workspace-wide events (not guests). The subject is the replicas' own (PresenceSubject).
func (f *feed) onPresence(m *nats.Msg) {
	f.mu.Lock()
	none := f.presence == 0
	f.mu.Unlock()
	if none {
		// A storm of handshakes is a storm of these: when no socket here asked, no walk over
		// every socket for each.
		return
	}
	ev := &liveEvent{facts: f.factsFor(persist.EventScope{}, nil), frame: textFrame(m.Data)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fanOutLocked(func(s *socket) {
		if s.presence {
			s.deliver(ev)
		}
	})
}

// onSelf delivers a person's own standing in a channel (streams.SelfSubject) to that person's
// live sockets, under the channel's visibility (MemberID: they see it though they just left).
// Only the server publishes there: bots are granted no such subject.
func (f *feed) onSelf(m *nats.Msg) {
	userID, channelID, ok := streams.ParseSelfSubject(m.Subject)
	if !ok {
		return
	}
	scope := persist.EventScope{ChannelID: channelID, MemberID: userID}
	ev := &liveEvent{scope: scope, facts: f.factsFor(scope, nil), frame: textFrame(m.Data)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fanOutLocked(func(s *socket) {
		if s.actor.UserID == userID {
			s.deliver(ev)
		}
	})
}
