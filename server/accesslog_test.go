package server_test

import (
	"bufio"
	"bytes"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/server"
)

// lockedBuffer is a log sink that handlers and the test share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestAccessLogStatuses: the access line carries the status the client saw, 101 for a
// WebSocket upgrade and the refusal's status for a refused one, before the connection is taken
// over or after.
func TestAccessLogStatuses(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	b := setupRealtime(t, servertest.WithConfig(func(c *server.Config) {
		c.AccessLog = true
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}))
	b.dial(t, b.owner.Token, "")
	_, status := b.h.DialSocket(t, servertest.Dial{Path: b.wsPath(""), Token: "sst_nonsense"})
	require.Equal(t, http.StatusUnauthorized, status)
	b.h.Get(t, "/api/me", b.owner.Token).RequireStatus(t, http.StatusOK)
	// A refusal written by the upgrader after it took the connection over: a WebSocket version
	// other than 13 gets 426 (RFC 6455 §4.4), seen by the client and by the log alike.
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.h.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("GET " + b.wsPath("") + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(b.h.URL, "http://") +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 12\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer " + b.owner.Token + "\r\n\r\n"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusUpgradeRequired, resp.StatusCode)

	line := func(route, status string) bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "msg=request") && strings.Contains(l, "route="+route+" ") && strings.Contains(l, "status="+status+" ") {
				return true
			}
		}
		return false
	}
	require.Eventually(t, func() bool {
		return line("/api/realtime/ws", "101") && line("/api/realtime/ws", "401") && line("/api/realtime/ws", "426") &&
			line("/api/me", "200")
	}, 5*time.Second, 10*time.Millisecond, logs.String())
}
