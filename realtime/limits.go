package realtime

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// socketCap is how many sockets the process may hold: maxSockets, within the descriptor limit
// less a reserve for everything else, so that at the cap the HTTP API still accepts requests
// and reaches the database. A zero reserve means a quarter of the limit, at most 1024.
func socketCap(maxSockets, reserve int) (int, error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY || lim.Cur > 1<<40 {
		return maxSockets, nil
	}
	fds := int(lim.Cur)
	if reserve == 0 {
		reserve = min(fds/4, 1024)
	}
	if fds-reserve < 1 {
		return 0, fmt.Errorf("realtime: the descriptor limit (RLIMIT_NOFILE %d) leaves no room for sockets beyond the reserve of %d; raise it (ulimit -n)",
			fds, reserve)
	}
	return min(maxSockets, fds-reserve), nil
}
