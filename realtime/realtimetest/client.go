// Package realtimetest is a real WebSocket client for tests of the realtime socket layer: it
// dials, reads server frames under a deadline, and sends frames masked as clients must, or raw
// bytes to break the protocol on purpose. Only _test.go files (and servertest) import it.
package realtimetest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/natterchat/natter/streams/streamstest"
)

// Dial describes a WebSocket connection attempt; zero fields are left out.
type Dial struct {
	Path      string
	Token     string // Authorization: Bearer
	Protocols []string
	Origin    string
	Cookie    *http.Cookie
	// RecvBuffer sets the client's SO_RCVBUF, to make a slow reader.
	RecvBuffer int
	// Over, when set, is a kept-alive connection that already carried other requests, which
	// the upgrade request is sent on instead of a new one.
	Over net.Conn
}

// Socket is a real WebSocket client reading frames under a deadline.
type Socket struct {
	Protocol string
	conn     net.Conn
	r        io.Reader
}

// SocketEvent is an event envelope as a client reads it: the same over a socket as over a
// bot's NATS connection.
type SocketEvent = streamstest.Event

// DialSocket opens a socket to the server at baseURL (http://host:port); a refused handshake
// returns its HTTP status.
func DialSocket(t testing.TB, baseURL string, d Dial) (*Socket, int) {
	t.Helper()
	header := http.Header{}
	if d.Token != "" {
		header.Set("Authorization", "Bearer "+d.Token)
	}
	if d.Origin != "" {
		header.Set("Origin", d.Origin)
	}
	if d.Cookie != nil {
		header.Set("Cookie", d.Cookie.String())
	}
	dialer := ws.Dialer{Header: ws.HandshakeHeaderHTTP(header), Protocols: d.Protocols, Timeout: 10 * time.Second}
	if d.RecvBuffer > 0 {
		dialer.NetDial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				err = c.(*net.TCPConn).SetReadBuffer(d.RecvBuffer)
			}
			return c, err
		}
	}
	if d.Over != nil {
		dialer.NetDial = func(context.Context, string, string) (net.Conn, error) { return d.Over, nil }
	}
	url := "ws" + strings.TrimPrefix(baseURL, "http") + d.Path
	conn, br, hs, err := dialer.Dial(context.Background(), url)
	var status ws.StatusError
	if errors.As(err, &status) {
		return nil, int(status)
	}
	if err != nil {
		t.Fatalf("dial %s: %v", d.Path, err)
	}
	s := &Socket{Protocol: hs.Protocol, conn: conn, r: conn}
	if br != nil {
		s.r = io.MultiReader(br, conn)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return s, http.StatusSwitchingProtocols
}

// ReadFrame reads the next frame under a deadline; a timeout fails the test, EOF gives ok=false.
func (s *Socket) ReadFrame(t testing.TB) (f ws.Frame, ok bool) {
	t.Helper()
	_ = s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := readFrame(s.r)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		(err != nil && strings.Contains(err.Error(), "connection reset")) {
		return f, false
	}
	if err != nil {
		t.Fatalf("read frame: %v", err)
	}
	return f, true
}

// Next returns the next event, answering pings on the way; a close or EOF fails the test.
func (s *Socket) Next(t testing.TB) SocketEvent {
	t.Helper()
	for {
		f, ok := s.ReadFrame(t)
		if !ok {
			t.Fatalf("the socket ended while an event was expected")
		}
		switch f.Header.OpCode {
		case ws.OpPing:
			s.Send(t, ws.NewPongFrame(f.Payload))
		case ws.OpText:
			var e SocketEvent
			if err := json.Unmarshal(f.Payload, &e); err != nil {
				t.Fatalf("frame is not an event: %v: %s", err, f.Payload)
			}
			return e
		case ws.OpClose:
			code, reason := ws.ParseCloseFrameData(f.Payload)
			t.Fatalf("the socket closed with %d %q while an event was expected", code, reason)
		}
	}
}

// ExpectClose reads past events and pings until the server's close frame and returns its code.
// It returns 0 when the connection ends without one.
func (s *Socket) ExpectClose(t testing.TB) ws.StatusCode {
	t.Helper()
	for {
		f, ok := s.ReadFrame(t)
		if !ok {
			return 0
		}
		if f.Header.OpCode == ws.OpClose {
			code, _ := ws.ParseCloseFrameData(f.Payload)
			return code
		}
	}
}

// Send writes a masked frame, as clients must.
func (s *Socket) Send(t testing.TB, f ws.Frame) {
	t.Helper()
	_ = s.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := ws.WriteFrame(s.conn, ws.MaskFrame(f)); err != nil {
		t.Fatalf("send frame: %v", err)
	}
}

// SendRaw writes bytes as they are: frames that break RFC 6455 on purpose.
func (s *Socket) SendRaw(t testing.TB, b []byte) {
	t.Helper()
	_ = s.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := s.conn.Write(b); err != nil {
		t.Fatalf("send raw bytes: %v", err)
	}
}

// Write writes bytes as they are and returns the error, for a client that keeps sending until
// the server drops it.
func (s *Socket) Write(b []byte) error {
	_ = s.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := s.conn.Write(b)
	return err
}

// readFrame reads one server frame of at most 1 MiB.
func readFrame(r io.Reader) (ws.Frame, error) {
	h, err := ws.ReadHeader(r)
	if err != nil {
		return ws.Frame{}, err
	}
	if h.Length > 1<<20 {
		return ws.Frame{}, errors.New("frame larger than 1 MiB")
	}
	payload := make([]byte, h.Length)
	if _, err := io.ReadFull(r, payload); err != nil {
		return ws.Frame{}, err
	}
	return ws.Frame{Header: h, Payload: payload}, nil
}

// End reads until the connection ends and returns the error that ended it: io.EOF (or
// io.ErrUnexpectedEOF within a frame) after the server's FIN, syscall.ECONNRESET after its
// reset. Frames are skipped; ten seconds without a byte fail the test.
func (s *Socket) End(t testing.TB) error {
	t.Helper()
	for {
		_ = s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := readFrame(s.r); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the connection did not end: %v", err)
			}
			return err
		}
	}
}

// Close drops the connection without a close frame, as a client that goes away does.
func (s *Socket) Close() error { return s.conn.Close() }
