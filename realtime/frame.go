package realtime

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/gobwas/ws"
)

// maxClientFrame bounds a frame a client may send. Clients send only pings, pongs and close
// (CONTRACT.md §Events); anything larger is refused with 1009.
const maxClientFrame = 4 << 10

// maxControlPayload is the most a control frame may carry (RFC 6455 §5.5).
const maxControlPayload = 125

// clientFrame is one parsed frame from a client, its payload unmasked in place.
type clientFrame struct {
	op      ws.OpCode
	fin     bool
	payload []byte
}

// parseClientFrame reads one frame from the front of b. It returns the bytes consumed, 0 when b
// holds only part of a frame. Codes are close codes, decided from the header alone so a hostile
// frame is refused before its payload is read: 1002 for what RFC 6455 §5 forbids (an unmasked
// frame, reserved bits without an extension, an unknown opcode, a fragmented control frame or
// one over 125 bytes), 1009 for a frame too large.
func parseClientFrame(b []byte) (f clientFrame, n int, code ws.StatusCode) {
	if len(b) < 2 {
		return f, 0, 0
	}
	f.fin = b[0]&0x80 != 0
	f.op = ws.OpCode(b[0] & 0x0f)
	switch {
	case b[0]&0x70 != 0, // RSV1-3: no extension is ever negotiated
		f.op.IsReserved(),
		f.op.IsControl() && (!f.fin || b[1]&0x7f > maxControlPayload),
		b[1]&0x80 == 0: // unmasked
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

// clientCloseCode reads a client's close frame (RFC 6455 §5.5.1, §7.4): the code to echo, or a
// code to fail the connection with instead. A code that may not appear on the wire (1005, 1006,
// 1015, reserved or unassigned ranges) or a one-byte body is a protocol error (1002); a reason
// that is not UTF-8 is invalid data (1007). An empty body is answered with 1000.
func clientCloseCode(payload []byte) (echo, fail ws.StatusCode) {
	switch {
	case len(payload) == 0:
		return ws.StatusNormalClosure, 0
	case len(payload) == 1:
		return 0, ws.StatusProtocolError
	}
	code := ws.StatusCode(binary.BigEndian.Uint16(payload))
	if !validWireCloseCode(code) {
		return 0, ws.StatusProtocolError
	}
	if !utf8.Valid(payload[2:]) {
		return 0, ws.StatusInvalidFramePayloadData
	}
	return code, 0
}

// validWireCloseCode: the codes RFC 6455 §7.4.1 defines for use on the wire, the later IANA
// registrations 1012-1014, and the ranges left to libraries (3000-3999) and applications
// (4000-4999).
func validWireCloseCode(c ws.StatusCode) bool {
	switch {
	case c >= 1000 && c <= 1003, c >= 1007 && c <= 1014:
		return true
	default:
		return c >= 3000 && c <= 4999
	}
}

// textFrame compiles a server text frame (servers do not mask).
func textFrame(payload []byte) []byte { return ws.MustCompileFrame(ws.NewTextFrame(payload)) }

// closeFrame compiles a close frame with a code and a short reason.
func closeFrame(code ws.StatusCode, reason string) []byte {
	return ws.MustCompileFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(code, reason)))
}

var pingFrame = ws.MustCompileFrame(ws.NewPingFrame(nil))

// isPing reports whether a queued frame is the server's own ping (the one shared frame).
func isPing(f []byte) bool { return len(f) == len(pingFrame) && &f[0] == &pingFrame[0] }
