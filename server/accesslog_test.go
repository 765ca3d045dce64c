package server_test

import (
	"bytes"
	"log/slog"
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
// WebSocket upgrade and the refusal's status for a refused one.
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

	line := func(route, status string) bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "msg=request") && strings.Contains(l, "route="+route+" ") && strings.Contains(l, "status="+status+" ") {
				return true
			}
		}
		return false
	}
	require.Eventually(t, func() bool {
		return line("/api/realtime/ws", "101") && line("/api/realtime/ws", "401") && line("/api/me", "200")
	}, 5*time.Second, 10*time.Millisecond, logs.String())
}
