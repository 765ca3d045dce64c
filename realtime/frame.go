package realtime

import (
	"encoding/binary"

	"github.com/gobwas/ws"
)

// maxClientFrame bounds a frame a client may send. Clients send only pings, pongs and close
// (CONTRACT.md §Events); anything larger is refused with 1009.
const maxClientFrame = 4 << 10

// clientFrame is one parsed frame from a client, its payload unmasked in place.
type clientFrame struct {
	op      ws.OpCode
	fin     bool
	payload []byte
}

// parseClientFrame reads one frame from the front of b. It returns the bytes consumed, 0 when b
// holds only part of a frame. Codes are close codes: 1002 for an unmasked frame, 1009 for one
// too large.
func parseClientFrame(b []byte) (f clientFrame, n int, code ws.StatusCode) {
	if len(b) < 2 {
		return f, 0, 0
	}
	f.fin = b[0]&0x80 != 0
	f.op = ws.OpCode(b[0] & 0x0f)
	if b[1]&0x80 == 0 {
		return f, 0, ws.StatusProtocolError
	}
	length := int64(b[1] & 0x7f)
	n = 2
	switch length {
	case 126:
		if len(b) < 4 {
			return f, 0, 0
		}
		length = int64(binary.BigEndian.Uint16(b[2:4]))
		n = 4
	case 127:
		if len(b) < 10 {
			return f, 0, 0
		}
		length = int64(binary.BigEndian.Uint64(b[2:10]) & (1<<63 - 1))
		n = 10
	}
	if length > maxClientFrame {
		return f, 0, ws.StatusMessageTooBig
	}
	if len(b) < n+4+int(length) {
		return f, 0, 0
	}
	var mask [4]byte
	copy(mask[:], b[n:n+4])
	n += 4
	f.payload = b[n : n+int(length)]
	ws.Cipher(f.payload, mask, 0)
	return f, n + int(length), 0
}

// textFrame compiles a server text frame (servers do not mask).
func textFrame(payload []byte) []byte { return ws.MustCompileFrame(ws.NewTextFrame(payload)) }

// closeFrame compiles a close frame with a code and a short reason.
func closeFrame(code ws.StatusCode, reason string) []byte {
	return ws.MustCompileFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(code, reason)))
}

var pingFrame = ws.MustCompileFrame(ws.NewPingFrame(nil))
