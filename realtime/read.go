package realtime

import (
	"errors"
	"time"

	"github.com/gobwas/ws"
	"golang.org/x/sys/unix"
)

// readBatch is how many bytes one worker turn reads from a socket: a client that never stops
// sending has its pongs flushed (or its queue judged) between batches, and goes to the back of
// the workers' queue so it cannot hold a worker.
const readBatch = 64 << 10

// readFrames drains what the client sent: pings are answered, a close is answered and ends the
// socket, data frames are ignored (clients send none). A frame that breaks RFC 6455 closes the
// socket with the code parseClientFrame or clientCloseCode gives. It reports true when it
// stopped at readBatch with more to read (the read is asked for again).
func (s *socket) readFrames(buf []byte) (more bool) {
	for read := 0; ; {
		if read >= readBatch {
			s.mu.Lock()
			s.work |= workRead
			s.mu.Unlock()
			return true
		}
		have := copy(buf, s.inbuf)
		n, rerr := unix.Read(s.fd, buf[have:])
		switch {
		case errors.Is(rerr, unix.EAGAIN) && s.unparsed:
			n = 0 // nothing new, but what came with the handshake may hold whole frames
		case errors.Is(rerr, unix.EAGAIN):
			return false
		case rerr != nil || n <= 0:
			s.shutdown() // the client went away
			return false
		default:
			read += n
			s.lastRead.Store(time.Now().UnixNano())
		}
		s.unparsed = false
		data := buf[:have+n]
		for len(data) > 0 {
			f, used, code := parseClientFrame(data)
			if code == 0 && used > 0 {
				code = s.sequenceError(f)
			}
			if code != 0 {
				s.close(code, "")
				return false
			}
			if used == 0 {
				break
			}
			data = data[used:]
			switch f.op {
			case ws.OpPing:
				if !s.answerPing(f.payload) {
					return false
				}
			case ws.OpClose:
				echo, fail := clientCloseCode(f.payload)
				if fail != 0 {
					s.close(fail, "")
					return false
				}
				s.closeAs(echo, "", false)
				return false
			}
		}
		s.inbuf = append(s.inbuf[:0], data...)
		if len(s.inbuf) == 0 {
			s.inbuf = nil
		}
	}
}

// sequenceError checks a data frame against the message in progress (RFC 6455 §5.4): a
// continuation needs an unfinished message, a new message needs none. Clients send no data
// (it is dropped), but a broken sequence is still a protocol error. Worker only.
func (s *socket) sequenceError(f clientFrame) ws.StatusCode {
	switch f.op {
	case ws.OpContinuation:
		if !s.fragmented {
			return ws.StatusProtocolError
		}
	case ws.OpText, ws.OpBinary:
		if s.fragmented {
			return ws.StatusProtocolError
		}
	default:
		return 0
	}
	s.fragmented = !f.fin
	return 0
}

// answerPing queues the pong, replacing one not yet written. It reports false when the socket
// was closed instead: a client whose unanswered pings alone would fill half the queue is
// abusing it (1008), and a queue that pongs fill beyond its bound is too slow (1013).
func (s *socket) answerPing(payload []byte) bool {
	pong := ws.MustCompileFrame(ws.NewPongFrame(payload))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state >= stateClosing {
		return false
	}
	s.pongDebt += len(pong)
	switch limit := s.hub.cfg.QueueBytes; {
	case s.pongDebt > limit/2:
		s.closeLocked(CloseAbuse, "too many pings left unread", true)
		return false
	case s.outBytes+s.pongDebt > limit:
		s.closeLocked(CloseTooSlow, "too slow; reconnect from your last cursor", true)
		return false
	}
	s.pong = pong
	s.addWorkLocked(workFlush)
	return true
}
