package realtime

import (
	"strconv"
	"time"

	"github.com/gobwas/ws"

	"github.com/natterchat/natter/persist"
)

// closeFor closes the socket with the close code of an error: the one place errors become
// close codes.
func (s *socket) closeFor(err error) {
	e, ok := persist.ErrorOf(err)
	switch {
	case ok && e.Code == persist.CodeResyncRequired:
		s.close(CloseResync, "resync required")
	case ok && (e.Code == persist.CodeUnauthenticated || e.Code == persist.CodeForbidden || e.Code == persist.CodeNotFound):
		s.close(CloseRevoked, "credentials revoked")
	default:
		s.hub.logger.Error("socket failed", "workspace_id", s.workspaceID, "error", err)
		s.close(ws.StatusInternalServerError, "")
	}
}

// closeGrace is how long a close frame may wait for a peer that does not read before the
// connection is dropped without it.
const closeGrace = 2 * time.Second

// close queues a close frame after anything being written and ends the socket once it is
// written (or closeGrace passed).
func (s *socket) close(code ws.StatusCode, reason string) { s.closeAs(code, reason, true) }

func (s *socket) closeAs(code ws.StatusCode, reason string, count bool) {
	s.mu.Lock()
	s.closeLocked(code, reason, count)
	s.mu.Unlock()
}

func (s *socket) closeLocked(code ws.StatusCode, reason string, count bool) {
	if s.state >= stateClosing {
		return
	}
	if frame := closeFrame(code, reason); s.running {
		// A worker may be writing out right now, outside the lock: replacing the queue under it
		// would lose its place. It swaps the close in at its next flush.
		s.deferredClose = frame
	} else {
		s.queueCloseLocked(frame)
	}
	s.state, s.pending, s.pendBytes, s.closingAt = stateClosing, nil, 0, time.Now()
	if count {
		s.hub.metrics.closes.WithLabelValues(strconv.Itoa(int(code))).Inc()
	}
	s.addWorkLocked(workFlush) // flush shuts the socket down once the close frame is written
}

// queueCloseLocked replaces what is queued with the close frame, after the frame partly on the
// wire (if any) so the peer still reads whole frames. No write may be in flight.
func (s *socket) queueCloseLocked(frame []byte) {
	keep, size := 0, len(frame)
	if s.outOff > 0 {
		keep, size = 1, size+len(s.out[0])-s.outOff
	}
	s.out, s.outBytes, s.pong = append(s.out[:keep:keep], frame), size, nil
}

// rejectNow closes a socket that never started: the close frame is written directly.
func (s *socket) rejectNow(code ws.StatusCode, reason string) {
	_ = s.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = s.conn.Write(closeFrame(code, reason))
	s.hub.metrics.closes.WithLabelValues(strconv.Itoa(int(code))).Inc()
	s.shutdown()
}
