package realtime

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestSocketCapLeavesAReserve reads this process's descriptor limit: sockets stop a reserve
// short of it (a quarter, at most 1024, unless set), and a reserve that leaves nothing fails
// at start-up.
func TestSocketCapLeavesAReserve(t *testing.T) {
	var lim unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &lim))
	if lim.Cur == unix.RLIM_INFINITY || lim.Cur > 1<<40 {
		t.Skip("no descriptor limit")
	}
	fds := int(lim.Cur)
	got, err := socketCap(1<<30, 0)
	require.NoError(t, err)
	require.Equal(t, fds-min(fds/4, 1024), got)
	got, err = socketCap(1<<30, 10)
	require.NoError(t, err)
	require.Equal(t, fds-10, got)
	got, err = socketCap(5, 10)
	require.NoError(t, err)
	require.Equal(t, 5, got, "MaxSockets below the limit stands")
	_, err = socketCap(5, fds)
	require.ErrorContains(t, err, "RLIMIT_NOFILE")
}
