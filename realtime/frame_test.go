package realtime

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/stretchr/testify/require"
)

// rawFrame builds a client frame byte by byte: b0 is FIN, RSV1-3 and the opcode; the payload is
// masked unless unmasked is set.
func rawFrame(b0 byte, payload []byte, unmasked bool) []byte {
	out := []byte{b0}
	maskBit := byte(0x80)
	if unmasked {
		maskBit = 0
	}
	switch n := len(payload); {
	case n < 126:
		out = append(out, maskBit|byte(n))
	case n <= 0xffff:
		out = append(out, maskBit|126)
		out = binary.BigEndian.AppendUint16(out, uint16(n))
	default:
		out = append(out, maskBit|127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	if unmasked {
		return append(out, payload...)
	}
	mask := [4]byte{0x12, 0x34, 0x56, 0x78}
	out = append(out, mask[:]...)
	body := append([]byte(nil), payload...)
	ws.Cipher(body, mask, 0)
	return append(out, body...)
}

func closeBody(code uint16, reason string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, code), reason...)
}

const (
	fin     = 0x80
	opCont  = 0x0
	opText  = 0x1
	opBin   = 0x2
	opClose = 0x8
	opPing  = 0x9
	opPong  = 0xa
)

// TestFrameRules sends frames RFC 6455 forbids, and close codes it does not allow on the wire,
// through a real socket: each closes the connection with the code §5 and §7.4 give. Valid close
// codes are echoed.
func TestFrameRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	token := e.session(t, e.owner)
	long := make([]byte, 126)
	cases := []struct {
		name  string
		bytes []byte
		want  ws.StatusCode
	}{
		{"RSV1", rawFrame(fin|0x40|opPing, nil, false), 1002},
		{"RSV2", rawFrame(fin|0x20|opPing, nil, false), 1002},
		{"RSV3", rawFrame(fin|0x10|opText, []byte("x"), false), 1002},
		{"Opcode3", rawFrame(fin|0x3, nil, false), 1002},
		{"Opcode7", rawFrame(fin|0x7, nil, false), 1002},
		{"OpcodeB", rawFrame(fin|0xb, nil, false), 1002},
		{"OpcodeF", rawFrame(fin|0xf, nil, false), 1002},
		{"FragmentedPing", rawFrame(opPing, []byte("a"), false), 1002},
		{"FragmentedClose", rawFrame(opClose, closeBody(1000, ""), false), 1002},
		{"Ping126Bytes", rawFrame(fin|opPing, long, false), 1002},
		{"Pong126Bytes", rawFrame(fin|opPong, long, false), 1002},
		{"Close126Bytes", rawFrame(fin|opClose, append(closeBody(1000, ""), long[:124]...), false), 1002},
		{"Unmasked", rawFrame(fin|opPing, nil, true), 1002},
		{"ContinuationFirst", rawFrame(fin|opCont, []byte("x"), false), 1002},
		{"NewMessageInsideFragments", append(rawFrame(opText, []byte("a"), false), rawFrame(fin|opBin, []byte("b"), false)...), 1002},
		{"OneByteClose", rawFrame(fin|opClose, []byte{0x03}, false), 1002},
		{"TooLarge", rawFrame(fin|opBin, make([]byte, 5000), false), 1009},
		{"CloseReasonNotUTF8", rawFrame(fin|opClose, closeBody(1000, "\xff\xfe"), false), 1007},
	}
	for _, code := range []uint16{0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535} {
		cases = append(cases, struct {
			name  string
			bytes []byte
			want  ws.StatusCode
		}{"CloseCode" + itoa(code), rawFrame(fin|opClose, closeBody(code, ""), false), 1002})
	}
	for _, code := range []uint16{1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999} {
		cases = append(cases, struct {
			name  string
			bytes []byte
			want  ws.StatusCode
		}{"Echoes" + itoa(code), rawFrame(fin|opClose, closeBody(code, "bye"), false), ws.StatusCode(code)})
	}
	cases = append(cases, struct {
		name  string
		bytes []byte
		want  ws.StatusCode
	}{"EmptyCloseIsAnsweredWith1000", rawFrame(fin|opClose, nil, false), 1000})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := e.dial(t, token, "1")
			s.SendRaw(t, c.bytes)
			require.Equal(t, c.want, s.ExpectClose(t))
		})
	}
	t.Run("FragmentedDataIsAllowed", func(t *testing.T) {
		t.Parallel()
		// Clients send no data, and what they send is dropped; a well-formed fragmented message,
		// with a ping between its fragments, breaks no rule.
		s := e.dial(t, token, "1")
		s.SendRaw(t, append(append(rawFrame(opText, []byte("a"), false), rawFrame(fin|opPing, []byte("p"), false)...),
			rawFrame(fin|opCont, []byte("b"), false)...))
		s.SendRaw(t, rawFrame(fin|opPing, []byte("after"), false))
		// Pongs may be coalesced, so the last ping's is the one to wait for.
		for {
			f, ok := s.ReadFrame(t)
			require.True(t, ok)
			require.NotEqual(t, ws.OpClose, f.Header.OpCode)
			if f.Header.OpCode == ws.OpPong && string(f.Payload) == "after" {
				break
			}
		}
	})
}

func itoa(n uint16) string { return strconv.Itoa(int(n)) }

// TestFrameSentWithTheHandshake: a ping the client sends in the same write as its upgrade
// request lands in the HTTP server's read buffer, not in the socket's kernel buffer where the
// poller would see it; it is answered all the same, though the client sends nothing after it.
func TestFrameSentWithTheHandshake(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	token := e.session(t, e.owner)
	for _, split := range []int{0, 3} { // the whole ping with the request, or its first 3 bytes
		t.Run("split"+strconv.Itoa(split), func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(e.urls[0], "http://"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			ping := rawFrame(fin|opPing, []byte("early"), false)
			first := ping
			if split > 0 {
				first = ping[:split]
			}
			req := "GET /ws?after_cursor=1 HTTP/1.1\r\nHost: " + strings.TrimPrefix(e.urls[0], "http://") + "\r\n" +
				"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
				"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer " + token + "\r\n\r\n"
			_, err = conn.Write(append([]byte(req), first...))
			require.NoError(t, err)
			require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
			if split > 0 {
				_, err = conn.Write(ping[split:])
				require.NoError(t, err)
			}
			for {
				h, err := ws.ReadHeader(br)
				require.NoError(t, err, "no pong for the ping sent with the handshake")
				require.NotEqual(t, ws.OpClose, h.OpCode)
				require.LessOrEqual(t, h.Length, int64(1<<20))
				payload := make([]byte, h.Length)
				_, err = io.ReadFull(br, payload)
				require.NoError(t, err)
				if h.OpCode == ws.OpPong {
					require.Equal(t, "early", string(payload))
					return
				}
			}
		})
	}
}

// TestParseClientFrame covers the parser without a socket: whole, partial and refused frames.
func TestParseClientFrame(t *testing.T) {
	ping := rawFrame(fin|opPing, []byte("hello"), false)
	f, n, code := parseClientFrame(append(append([]byte(nil), ping...), 0x89))
	require.Zero(t, code)
	require.Equal(t, len(ping), n)
	require.Equal(t, ws.OpPing, f.op)
	require.Equal(t, "hello", string(f.payload))
	for i := 0; i < len(ping); i++ {
		_, n, code := parseClientFrame(ping[:i])
		require.Zero(t, n, "a partial frame of %d bytes", i)
		require.Zero(t, code)
	}
	// Refused from the header alone, before the payload arrives.
	_, n, code = parseClientFrame(rawFrame(fin|opPing, make([]byte, 4000), false)[:4])
	require.Equal(t, ws.StatusCode(1002), code)
	require.Zero(t, n)
	_, _, code = parseClientFrame(rawFrame(fin|opBin, make([]byte, 70000), false)[:10])
	require.Equal(t, ws.StatusCode(1009), code)
}

// FuzzClientFrame feeds the frame reader arbitrary client bytes, as readFrames does: it never
// panics, consumes no more than it was given, and what it accepts obeys RFC 6455 §5.
func FuzzClientFrame(f *testing.F) {
	f.Add(rawFrame(fin|opPing, []byte("hi"), false))
	f.Add(rawFrame(fin|opClose, closeBody(1000, "bye"), false))
	f.Add(rawFrame(fin|opClose, []byte{1}, false))
	f.Add(append(rawFrame(opText, []byte("a"), false), rawFrame(fin|opCont, []byte("b"), false)...))
	f.Add(rawFrame(fin|opBin, make([]byte, 300), false))
	f.Add(rawFrame(fin|0x40|opPing, nil, true))
	f.Add([]byte{0x89, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &socket{}
		for len(data) > 0 {
			fr, n, code := parseClientFrame(data)
			if code == 0 && n > 0 {
				code = s.sequenceError(fr)
			}
			if code != 0 {
				if code != 1002 && code != 1009 {
					t.Fatalf("close code %d from the parser", code)
				}
				return
			}
			if n == 0 {
				return
			}
			if n > len(data) || len(fr.payload) > maxClientFrame {
				t.Fatalf("consumed %d of %d bytes, payload %d", n, len(data), len(fr.payload))
			}
			if fr.op.IsControl() && (!fr.fin || len(fr.payload) > 125) {
				t.Fatalf("accepted a control frame fin=%v of %d bytes", fr.fin, len(fr.payload))
			}
			if fr.op.IsReserved() {
				t.Fatalf("accepted opcode %x", fr.op)
			}
			if fr.op == ws.OpClose {
				echo, fail := clientCloseCode(fr.payload)
				if (echo == 0) == (fail == 0) {
					t.Fatalf("close body %x: echo %d, fail %d", fr.payload, echo, fail)
				}
				if echo != 0 && !validWireCloseCode(echo) {
					t.Fatalf("would echo %d", echo)
				}
			}
			data = data[n:]
		}
	})
}

// TestFirstPingAfterAnInterval: pings go to sockets idle for a ping interval, counted from the
// handshake, so a socket that just opened is not pinged at the idle timer's first tick.
func TestFirstPingAfterAnInterval(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, func(c *Config) { c.PingInterval = time.Hour })
	s := e.dial(t, e.session(t, e.owner), "1")
	time.Sleep(300 * time.Millisecond) // six ticks of the test's 50 ms idle timer
	s.SendRaw(t, rawFrame(fin|opPing, []byte("mine"), false))
	for {
		f, ok := s.ReadFrame(t)
		require.True(t, ok)
		require.NotEqual(t, ws.OpPing, f.Header.OpCode, "a socket open for 300 ms was pinged with a 1 h interval")
		if f.Header.OpCode == ws.OpPong {
			return
		}
	}
}
