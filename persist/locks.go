package persist

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Locks holds session-level advisory locks on one dedicated connection, for a component that owns
// something for as long as it runs (the relay's workspace shards across replicas). Every lock
// ends when Close is called or the connection is lost; Check reports the loss. It is an entry
// point of its own (see the package doc) because a transaction cannot hold a lock across publishes.
// Not safe for concurrent use.
type Locks struct {
	conn *pgx.Conn
}

// Locks opens a dedicated connection for advisory locks.
func (s *Store) Locks(ctx context.Context) (*Locks, error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire lock connection: %w", err)
	}
	// Hijacked, the connection leaves the pool for good: closing it releases every lock.
	return &Locks{conn: pc.Hijack()}, nil
}

// TryLock takes key if nobody holds it and reports whether this session holds it now.
func (l *Locks) TryLock(ctx context.Context, key int64) (bool, error) {
	var ok bool
	err := l.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok)
	return ok, err
}

// TryLockShared takes key in shared mode if nobody holds it exclusively and reports whether this
// session holds it now: shared holders exclude exclusive ones, not each other.
func (l *Locks) TryLockShared(ctx context.Context, key int64) (bool, error) {
	var ok bool
	err := l.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock_shared($1)`, key).Scan(&ok)
	return ok, err
}

// Check fails when the connection, and with it every lock, is gone.
func (l *Locks) Check(ctx context.Context) error { return l.conn.Ping(ctx) }

// Close releases every lock: at once when the connection still answers (the server would
// otherwise release them only when it notices the disconnect), and by closing it anyway.
func (l *Locks) Close(ctx context.Context) error {
	_, _ = l.conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
	return l.conn.Close(ctx)
}
