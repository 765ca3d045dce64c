package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/natterchat/natter/persist"
)

// natsOwnerLock is the advisory lock that ties a database to one NATS ("natt" "ns" …): a server
// with the embedded NATS holds it exclusively, servers on an external cluster share it.
const natsOwnerLock int64 = 0x6e617474_6e730000

// ErrOtherNATS is returned by ClaimDatabase when a server using another NATS serves the
// database: the events of one database live in one NATS, and sockets of a server whose NATS
// holds no streams would receive nothing.
var ErrOtherNATS = errors.New("another natter server with a different NATS is running on this database")

// ClaimDatabase records, for as long as this server runs, which NATS the database's events go to:
// embedded takes the database for this process's built-in NATS alone; otherwise every server on
// the external cluster shares it. It fails with ErrOtherNATS when the claim conflicts (a second
// server with built-in NATS, or built-in beside external ones). release ends the claim; so does
// the end of the process or of its database connection.
func ClaimDatabase(ctx context.Context, store *persist.Store, embedded bool) (release func(), err error) {
	locks, err := store.Locks(ctx)
	if err != nil {
		return nil, err
	}
	take, hint := locks.TryLockShared, "a server with built-in NATS holds it: stop that one, or give this one --nats-url of the NATS it should share"
	if embedded {
		take, hint = locks.TryLock, "each server with built-in NATS needs its own database; servers sharing one database are replicas and need "+
			"--nats-url of one NATS cluster (docs/operations.md)"
	}
	ok, err := take(ctx, natsOwnerLock)
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s", ErrOtherNATS, hint)
	}
	if err != nil {
		_ = locks.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = locks.Close(cctx)
	}, nil
}
