package realtime

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/natterchat/natter/persist"
)

// work is what a socket is waiting for a worker to do.
type work uint8

const (
	workRead work = 1 << iota
	workCheck
	workCatchUp
	workFlush
	workShutdown
)

type socketState uint8

const (
	// stateJoining: attached to the feed, not upgraded yet; live events wait in pending.
	stateJoining socketState = iota
	// stateCatchingUp: backfilling (the feed's tail, the stream, Postgres); live events wait in
	// pending.
	stateCatchingUp
	// stateWaiting: backfilled, waiting for the workspace's consumer to start.
	stateWaiting
	// stateLive: events come from the feed.
	stateLive
	// stateClosing: a close frame is queued; nothing else is sent.
	stateClosing
	stateClosed
)

// catchUpPage is how many events one backfill read takes.
const catchUpPage = 500

// socket is one WebSocket. Idle, it costs this struct and its registrations: no goroutine and
// no read buffer. A worker handles it when it has work (readable, frames queued, a catch-up page
// due, a check due); at most one worker at a time, so raw reads and writes need no lock. Its
// descriptor is read and written directly (non-blocking) and closed only by shutdown, which runs
// in the worker that has the socket, or before any worker can (see the callers).
type socket struct {
	hub         *Hub
	feed        *feed
	conn        net.Conn
	raw         syscall.RawConn
	fd          int
	actor       persist.Actor
	workspaceID string
	sessionID   string
	tokenID     string
	owner       string       // what the per-account cap counts by (Join.owner)
	presence    bool         // receives presence.changed (Join.Presence)
	lastRead    atomic.Int64 // unix nanoseconds of the last bytes from the client
	inbuf       []byte       // worker only: the start of a client frame not yet complete
	fragmented  bool         // worker only: a client data message is unfinished
	unparsed    bool         // worker only: inbuf holds what the handshake's reader buffered, not yet parsed

	mu        sync.Mutex
	viewer    persist.Viewer
	checkedAt time.Time
	state     socketState
	pos       int64        // the last cursor processed, sent or not visible
	pending   []*liveEvent // live events that arrived during catch-up
	pendBytes int          // the frames' bytes in pending, bounded by QueueBytes/2
	overflow  bool         // pending overflowed: read Postgres again before going live
	out       [][]byte     // frames to write
	outOff    int          // bytes of out[0] already written
	outBytes  int          // bytes of out not yet written: with pongDebt, bounded by QueueBytes

	// announced counts the announcements (a revocation, a membership change) that asked this
	// socket to check again; checked is the count its last finished check had seen. While they
	// differ, live events wait in held, so none is filtered by a standing that just ended (a
	// member, or a user bot's owner, made a guest) and none is lost to one that just began.
	announced, checked uint64
	held               []*liveEvent
	heldBytes          int // the frames' bytes in held, bounded with out by QueueBytes

	// pong is the one answer to the client's pings waiting to be written: a ping that arrives
	// before it is written replaces it (RFC 6455 §5.5.3), so a ping flood holds one pong.
	pong []byte
	// pongDebt is what the pongs asked for since the queue last drained would have cost: the
	// client's share of the queue, counted as if none were coalesced.
	pongDebt int
	// deferredClose is a close frame queued while a worker was running: the worker may be in the
	// middle of writing out, so the frame replaces the queue at the worker's next flush.
	deferredClose []byte
	work          work
	queued        bool
	running       bool
	disarmed      bool // the poller delivered an event: arm again after this round
	wantWrite     bool // the kernel buffer is full: wait for writability
	armedWrite    bool
	armedRead     bool
	lastPing      time.Time // when the idle timer last queued a ping
	// pingOut is when the last ping went to the kernel (taken before the write that carried
	// it, so an answer always comes after it): the half-open reaper counts from it, not from
	// the queueing, since a busy replica may write a ping long after it was queued.
	pingOut   time.Time
	closingAt time.Time // when the close frame was queued: it has closeGrace to be written
	// abort drops the connection with a reset instead of a FIN after what the kernel still
	// holds (see shutdown).
	abort bool
}

// addWorkLocked records work and queues the socket unless a worker has it already.
func (s *socket) addWorkLocked(w work) {
	if s.state == stateClosed {
		return
	}
	s.work |= w
	if s.state == stateJoining {
		return // no connection yet: Accept queues the socket once it has one
	}
	if !s.running && !s.queued {
		s.queued = true
		select {
		case s.hub.queue <- s:
		default: // cannot happen: the queue has a slot per socket
			s.queued = false
		}
	}
}

// run is a worker's turn with the socket: it does the recorded work until none is left, then
// re-arms the socket's descriptor.
func (s *socket) run(ctx context.Context, buf []byte) {
	s.mu.Lock()
	s.queued, s.running = false, true
	more := false // the client is still sending: the socket goes to the back of the queue
	for s.work != 0 && s.state != stateClosed && !more {
		w := s.work
		s.work = 0
		s.mu.Unlock()
		if w&workRead != 0 {
			if more = s.readFrames(buf); more {
				w |= workFlush
			}
		}
		if w&workCheck != 0 {
			s.check(ctx)
		}
		if w&workCatchUp != 0 {
			s.catchUp(ctx)
		}
		if w&(workFlush|workShutdown) != 0 {
			s.flush(ctx)
		}
		if w&workShutdown != 0 {
			s.shutdown()
		}
		s.mu.Lock()
	}
	// A closing socket reads no more (RFC 6455 §5.5.1: nothing after the close matters); it
	// waits only to write its close frame.
	wantRead := s.state < stateClosing
	if s.state != stateClosed && (s.disarmed || s.wantWrite != s.armedWrite || wantRead != s.armedRead) {
		s.disarmed, s.armedWrite, s.armedRead = false, s.wantWrite, wantRead
		if err := s.hub.poller.arm(s, wantRead, s.wantWrite); err != nil {
			s.work |= workShutdown
		}
	}
	s.running = false
	if s.work != 0 {
		s.addWorkLocked(0)
	}
	s.mu.Unlock()
}

// queueLocked appends a frame the server sends on its own (an event, a ping) unless that would
// take the queue past its bound: then the socket is closed with 1013, since its reader is too
// slow, and it reports false.
func (s *socket) queueLocked(frame []byte) bool {
	if s.outBytes+s.pongDebt+len(frame) > s.hub.cfg.QueueBytes {
		s.closeLocked(CloseTooSlow, "too slow; reconnect from your last cursor", true)
		return false
	}
	s.out = append(s.out, frame)
	s.outBytes += len(frame)
	s.addWorkLocked(workFlush)
	return true
}

// deliver hands the socket a live event; the feed calls it in cursor order, holding its lock.
func (s *socket) deliver(ev *liveEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateLive:
		if ev.cursor != 0 {
			if ev.cursor <= s.pos {
				return
			}
			s.pos = ev.cursor
		}
		if s.announced != s.checked {
			if s.outBytes+s.pongDebt+s.heldBytes+len(ev.frame) > s.hub.cfg.QueueBytes {
				s.closeLocked(CloseTooSlow, "too slow; reconnect from your last cursor", true)
				return
			}
			s.held = append(s.held, ev)
			s.heldBytes += len(ev.frame)
			return
		}
		if !ev.visibleTo(s.viewer) {
			return
		}
		if s.writeNowLocked(ev.frame) {
			return
		}
		s.queueLocked(ev.frame)
	case stateJoining, stateCatchingUp, stateWaiting:
		if s.overflow {
			return
		}
		// Half the queue: with a backfill page (the other half at most) the hand-off fits.
		if s.pendBytes+len(ev.frame) > s.hub.cfg.QueueBytes/2 {
			s.overflow, s.pending, s.pendBytes = true, nil, 0
			return
		}
		s.pending = append(s.pending, ev)
		s.pendBytes += len(ev.frame)
	}
}

// writeNowLocked is the fan-out's fast path: a live socket with nothing queued, no worker on it
// and a fresh check gets the frame written at once by the caller, without a hand-off to the
// pool. It reports false (nothing or part written: the rest is queued by the caller's fallback)
// when the socket is busy or the kernel buffer is full. Caller holds s.mu, which keeps workers
// away: they write only while running, and start running only under s.mu.
func (s *socket) writeNowLocked(frame []byte) bool {
	if s.running || s.queued || len(s.out) > 0 || s.pong != nil || s.wantWrite || s.staleLocked() {
		return false
	}
	n, err := unix.Write(s.fd, frame)
	if err == nil && n == len(frame) {
		return true
	}
	if n > 0 {
		// Part of the frame is on the wire: the rest must follow before anything else.
		s.out, s.outOff, s.outBytes, s.wantWrite = append(s.out, frame), n, len(frame)-n, true
		s.addWorkLocked(workFlush)
		return true
	}
	return false
}

// resync sends the socket back to Postgres: the stream skipped cursors.
func (s *socket) resync() {
	s.mu.Lock()
	switch s.state {
	case stateJoining:
		s.overflow, s.pending, s.pendBytes = true, nil, 0
	case stateLive, stateCatchingUp, stateWaiting:
		s.state, s.overflow, s.pending, s.pendBytes = stateCatchingUp, true, nil, 0
		s.addWorkLocked(workCatchUp)
	}
	s.mu.Unlock()
}

// feedStarted resumes a socket that finished its backfill before the consumer ran.
func (s *socket) feedStarted() {
	s.mu.Lock()
	if s.state == stateWaiting {
		s.state = stateCatchingUp
		s.addWorkLocked(workCatchUp)
	}
	s.mu.Unlock()
}

// catchUp sends one page of backfill. At the end of the log it hands over to the
// feed: pending live events after the last cursor sent follow, and the socket is live. The next
// page waits until this one is written.
func (s *socket) catchUp(ctx context.Context) {
	s.mu.Lock()
	if s.state != stateCatchingUp || len(s.out) > 0 {
		s.mu.Unlock()
		return
	}
	after, stale := s.pos, s.staleLocked()
	s.mu.Unlock()
	if stale && !s.check(ctx) {
		return
	}
	s.mu.Lock()
	viewer := s.viewer
	s.mu.Unlock()
	// A page takes at most half the queue (and at least one event): the rest is room for the
	// live events and pongs of the hand-off. A recent cursor is caught up from the feed's tail
	// in memory, an older one from the workspace's stream (history.go), and only what the
	// stream does not hold from Postgres.
	frames, size, next, more, ok := s.feed.tailAfter(after, s.hub.cfg.QueueBytes/2, viewer)
	source, streamEnded := "memory", false
	if !ok {
		var res streamResult
		frames, size, next, res = s.feed.streamAfter(ctx, after, s.hub.cfg.QueueBytes/2, viewer)
		switch res {
		case streamServed:
			ok, more, source = true, true, "stream"
		case streamAtEnd:
			ok, streamEnded, source = true, true, "stream"
		}
	}
	if !ok {
		var err error
		source = "postgres"
		if frames, size, next, more, err = s.postgresPage(ctx, after); err != nil {
			if ctx.Err() == nil { // a hub stopping closes its sockets with 1001 instead
				s.closeFor(err)
			}
			return
		}
	}
	liveFrom := s.feed.liveStart()
	s.mu.Lock()
	if s.state != stateCatchingUp {
		s.mu.Unlock()
		return
	}
	s.out, s.outBytes = append(s.out, frames...), s.outBytes+size
	s.pos = next
	s.hub.metrics.backfilled.WithLabelValues(source).Add(float64(len(frames)))
	switch {
	case more:
		// The next page follows once this one is written (flush asks for it).
	case liveFrom == 0:
		s.state = stateWaiting
	case streamEnded:
		// The stream ended at the cursor before the feed went live: the tail answers now.
		s.work |= workCatchUp
	case s.pos < liveFrom-1 && next > after:
		s.work |= workCatchUp // the consumer started past what was read: read on
	case s.overflow:
		s.overflow = false
		s.work |= workCatchUp // live events were dropped meanwhile: read them again
	default:
		for _, ev := range s.pending {
			if ev.cursor != 0 && ev.cursor <= s.pos {
				continue // sent by the catch-up already
			}
			s.pos = max(s.pos, ev.cursor)
			if ev.visibleTo(s.viewer) {
				s.out, s.outBytes = append(s.out, ev.frame), s.outBytes+len(ev.frame)
			}
		}
		s.pending, s.pendBytes, s.state = nil, 0, stateLive
	}
	s.addWorkLocked(workFlush)
	waiting := s.state == stateWaiting
	s.mu.Unlock()
	// The feed may have gone live after liveFrom was read, and onLive found the socket still
	// catching up: it must not wait for a start that already happened.
	if waiting && s.feed.liveStart() != 0 {
		s.feedStarted()
	}
}

// flush writes queued frames without blocking: when the kernel buffer fills, the socket waits
// for writability in the poller and the worker moves on.
func (s *socket) flush(ctx context.Context) {
	var scratch [64][]byte
	iovs := scratch[:0]
	checked := false // one check per flush: with a tiny interval the check itself would go stale
	for {
		s.mu.Lock()
		if s.state == stateClosed || s.raw == nil {
			s.mu.Unlock()
			return
		}
		if s.deferredClose != nil {
			s.queueCloseLocked(s.deferredClose)
			s.deferredClose = nil
		}
		if len(s.out) == 0 && s.pong != nil {
			// The pong goes out once what was queued before it has: on a socket that keeps up
			// that is at once, and on one that does not it waits as the one pending pong.
			s.out, s.outBytes, s.pong = append(s.out, s.pong), len(s.pong), nil
		}
		if len(s.out) == 0 {
			s.out, s.outBytes, s.wantWrite, s.pongDebt = nil, 0, false, 0
			if s.state == stateCatchingUp {
				s.work |= workCatchUp
			}
			closed := s.state == stateClosing
			s.mu.Unlock()
			if closed {
				s.shutdown() // the close frame is on the wire
			}
			return
		}
		if s.state == stateLive && !checked && s.staleLocked() {
			s.mu.Unlock()
			s.check(ctx) // on failure the close frame is what remains queued
			checked = true
			continue
		}
		iovs = iovs[:0]
		for i, f := range s.out[:min(len(s.out), 64)] {
			if i == 0 {
				f = f[s.outOff:]
			}
			iovs = append(iovs, f)
		}
		s.mu.Unlock()
		// The descriptor is used directly: only the worker running this socket closes it.
		at := time.Now()
		n, werr := unix.Writev(s.fd, iovs)
		if errors.Is(werr, unix.EAGAIN) {
			s.mu.Lock()
			s.wantWrite = true
			s.mu.Unlock()
			return
		}
		if werr != nil {
			s.shutdown()
			return
		}
		s.mu.Lock()
		s.outBytes -= n
		written := 0
		for n > 0 && written < len(iovs) {
			if n < len(iovs[written]) {
				s.outOff += n
				n = 0
				break
			}
			n -= len(iovs[written])
			if isPing(s.out[written]) {
				s.pingOut = at
			}
			written++
			s.outOff = 0
		}
		s.out = s.out[written:]
		stuck := written < len(iovs)
		s.wantWrite = stuck
		s.mu.Unlock()
		if stuck {
			return
		}
	}
}

// tick is the idle timer's visit: reap a half-open socket, ping an idle one, and revalidate a
// session or a bot token: a person's session is returned as due for the bulk check (when bulk
// is set and it is due within bulkAhead), a bot's is checked by a worker once stale.
func (s *socket) tick(now time.Time, bulk bool) (dueCheck, bool) {
	ping := s.hub.cfg.PingInterval
	s.mu.Lock()
	defer s.mu.Unlock()
	// Half-open: asked (a ping on the wire for an interval) and nothing came back, or nothing
	// came for two intervals while the peer takes none of what is written (its ping cannot
	// even go out). Arrival is epoll's readiness (hub.ready), and a readiness still waiting
	// for a worker is a sign of life too: the one-shot registration reports nothing more
	// until it is read. A ping queued behind a busy replica's backlog counts from its write.
	lastRead := time.Unix(0, s.lastRead.Load())
	unanswered := !s.pingOut.IsZero() && lastRead.Before(s.pingOut) && now.Sub(s.pingOut) > ping
	stuck := s.wantWrite && now.Sub(lastRead) > 2*ping
	if (unanswered || stuck) && !s.disarmed {
		if s.work&workShutdown == 0 {
			s.hub.metrics.reaped.Inc()
		}
		s.abort = true
		s.addWorkLocked(workShutdown)
		return dueCheck{}, false
	}
	if s.state == stateClosing && now.Sub(s.closingAt) > closeGrace {
		s.abort = true
		s.addWorkLocked(workShutdown) // a peer that reads nothing never gets its close frame
	}
	if s.state >= stateClosing {
		return dueCheck{}, false
	}
	if now.Sub(s.lastPing) >= ping {
		s.lastPing = now
		if !s.queueLocked(pingFrame) {
			return dueCheck{}, false
		}
	}
	if !s.revalidates() {
		return dueCheck{}, false
	}
	age := now.Sub(s.checkedAt)
	if s.checkedInBulk() {
		return dueCheck{s: s, seen: s.announced}, bulk && age >= s.hub.cfg.RevalidateInterval-s.hub.bulkAhead()
	}
	if age >= s.hub.cfg.RevalidateInterval {
		s.addWorkLocked(workCheck)
	}
	return dueCheck{}, false
}

// shutdown releases the socket: poller, feed, hub, connection.
func (s *socket) shutdown() {
	s.mu.Lock()
	if s.state == stateClosed {
		s.mu.Unlock()
		return
	}
	s.state, s.out, s.outBytes, s.pong, s.pending, s.pendBytes, s.work = stateClosed, nil, 0, nil, nil, 0, 0
	conn, abort := s.conn, s.abort
	s.mu.Unlock()
	if conn != nil {
		s.hub.poller.remove(s)
	}
	if s.feed != nil {
		s.feed.detach(s)
	}
	s.hub.forget(s)
	if conn != nil {
		if tcp, ok := conn.(*net.TCPConn); ok && abort {
			// A peer that reads nothing (half-open, or too slow for even its close frame):
			// what the kernel still holds for it is dropped and the peer reset at once. A
			// plain close would leave the connection to the kernel, which sends the rest, and
			// the FIN, only into a window the peer opens; after a long stall its probes are
			// so far apart that a peer reading again waits seconds, or for ever, to learn the
			// connection is gone, while the kernel keeps the buffers.
			_ = tcp.SetLinger(0)
		}
		_ = conn.Close()
	}
}

// goAway closes the socket with 1001 when the hub stops; the workers are gone, so it writes
// directly.
func (s *socket) goAway() {
	s.close(CloseGoingAway, "server shutting down")
	s.flush(context.Background())
	s.shutdown()
}

// setConn takes the upgraded connection; the raw descriptor is read and written without
// blocking, so it must be a plain TCP connection.
func (s *socket) setConn(conn net.Conn) error {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return errors.New("realtime: the connection has no file descriptor (TLS must end before natter)")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.conn, s.raw = conn, raw
	s.mu.Unlock()
	var serr error
	if err := raw.Control(func(fd uintptr) {
		s.fd = int(fd)
		if n := s.hub.cfg.SendBuffer; n > 0 {
			serr = unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, n)
		}
	}); err != nil {
		return err
	}
	return serr
}
