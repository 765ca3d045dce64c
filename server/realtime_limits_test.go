package server_test

import (
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/realtime"
)

// TestSocketCapPerUser opens 64 sockets as one person through the real router: the 65th
// handshake is refused before the upgrade with 429 and the error body; another member still
// connects.
func TestSocketCapPerUser(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t)
	for i := 0; i < 64; i++ {
		b.dial(t, b.owner.Token, "2")
	}
	r := b.h.Do(t, servertest.Request{Method: http.MethodGet, Path: b.wsPath("2"), Token: b.owner.Token, Header: map[string]string{
		"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}})
	r.RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
	require.Contains(t, string(r.Body), "64")
	b.dial(t, b.member.Token, "2")
}

// TestSocketDescriptorReserve runs itself in a child process whose descriptor limit is 1024:
// sockets stop at the limit less the reserve (1024-700 = 324), refused with 503 before the
// upgrade, and the HTTP API keeps answering. Each socket costs the child two descriptors (the
// client's and the server's end), which the reserve leaves room for.
func TestSocketDescriptorReserve(t *testing.T) {
	if os.Getenv("NATTER_TEST_FD_CHILD") == "" {
		t.Parallel()
		cmd := exec.Command(os.Args[0], "-test.run=^TestSocketDescriptorReserve$", "-test.count=1")
		cmd.Env = append(os.Environ(), "NATTER_TEST_FD_CHILD=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the child test failed:\n%s", out)
		require.True(t, strings.Contains(string(out), "PASS"), "%s", out)
		return
	}
	lim := unix.Rlimit{Cur: 1024, Max: 1024}
	var old unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &old))
	lim.Max = old.Max
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lim))
	b := setupRealtime(t, servertest.WithRealtime(func(c *realtime.Config) {
		c.FDReserve = 700
		c.MaxSocketsPerUser = 1000
	}))
	opened := 0
	for ; opened < 400; opened++ {
		_, status := b.h.DialSocket(t, servertest.Dial{Path: b.wsPath("2"), Token: b.owner.Token})
		if status != http.StatusSwitchingProtocols {
			require.Equal(t, http.StatusServiceUnavailable, status)
			break
		}
	}
	require.Equal(t, 1024-700, opened)
	b.h.Get(t, "/api/me", b.owner.Token).RequireStatus(t, http.StatusOK)
	b.h.Get(t, "/api/me", b.member.Token).RequireStatus(t, http.StatusOK)
}
