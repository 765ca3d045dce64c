package servertest

import (
	"testing"

	"github.com/natterchat/natter/realtime/realtimetest"
)

// The WebSocket client lives in realtimetest, where the realtime package's own tests use it too.
type (
	// Dial describes a WebSocket connection attempt; zero fields are left out.
	Dial = realtimetest.Dial
	// Socket is a real WebSocket client reading frames under a deadline.
	Socket = realtimetest.Socket
	// SocketEvent is an event envelope as a client reads it.
	SocketEvent = realtimetest.SocketEvent
)

// DialSocket opens a socket to the harness; a refused handshake returns its HTTP status.
func (h *Harness) DialSocket(t testing.TB, d Dial) (*Socket, int) {
	t.Helper()
	return realtimetest.DialSocket(t, h.URL, d)
}
