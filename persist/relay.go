package persist

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// RelayState is how far a workspace's log has been copied into its stream.
type RelayState struct {
	WorkspaceID string
	EventWindow
	// Relayed is the newest cursor the stream is known to hold; events up to it are there.
	Relayed int64
	// StreamPrunedThrough is the prune the stream has been purged to.
	StreamPrunedThrough int64
}

const relayStateColumns = `h.workspace_id, h.last_cursor, h.pruned_through,
	coalesce(p.relayed_cursor, 0), coalesce(p.stream_pruned_through, 0)`

func scanRelayStates(rows pgx.Rows) ([]RelayState, error) {
	defer rows.Close()
	var out []RelayState
	for rows.Next() {
		var s RelayState
		if err := rows.Scan(&s.WorkspaceID, &s.Head, &s.PrunedThrough, &s.Relayed, &s.StreamPrunedThrough); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// RelayPending lists workspaces whose stream is behind their log: unrelayed events, or a prune
// not yet applied to the stream. It is the relay's poll, the safety net under wake-ups.
func (tx *Tx) RelayPending(ctx context.Context, limit int) ([]RelayState, error) {
	rows, err := tx.query(ctx, `SELECT `+relayStateColumns+`
		FROM event_heads h LEFT JOIN relay_positions p ON p.workspace_id = h.workspace_id
		WHERE h.last_cursor > coalesce(p.relayed_cursor, 0) OR h.pruned_through > coalesce(p.stream_pruned_through, 0)
		LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return scanRelayStates(rows)
}

// RelayStateGet reads one workspace's relay state. Codes: not_found.
func (tx *Reader) RelayStateGet(ctx context.Context, workspaceID string) (RelayState, error) {
	rows, err := tx.query(ctx, `SELECT `+relayStateColumns+`
		FROM event_heads h LEFT JOIN relay_positions p ON p.workspace_id = h.workspace_id
		WHERE h.workspace_id = $1`, workspaceID)
	if err != nil {
		return RelayState{}, err
	}
	states, err := scanRelayStates(rows)
	if err != nil {
		return RelayState{}, err
	}
	if len(states) == 0 {
		return RelayState{}, NotFound("workspace")
	}
	return states[0], nil
}

// RelayPositionSet records what a workspace's stream holds. Only the relay owning the
// workspace's shard writes it.
//
// Its commit does not wait for the disk: the relay records after every pass, and a flush of its
// own each time doubles the flushes of a busy workspace. A position lost in a crash is only
// older than the stream, and the relay starts from what its stream holds (it verifies the stream
// before its first pass), then records again; readers of the position take an older one as
// "not relayed yet" and read those events from the log.
//
// It is one statement outside any transaction, one round trip (relaxedCommit; before, BEGIN,
// SET LOCAL, the insert and COMMIT were four).
func (s *Store) RelayPositionSet(ctx context.Context, workspaceID string, relayed, streamPrunedThrough int64) error {
	_, err := s.pool.Exec(ctx, `WITH `+relaxedCommit+`
		INSERT INTO relay_positions (workspace_id, relayed_cursor, stream_pruned_through, updated_at)
		SELECT $1, $2, $3, $4 FROM relaxed
		ON CONFLICT (workspace_id) DO UPDATE SET relayed_cursor = $2, stream_pruned_through = $3, updated_at = $4`,
		workspaceID, relayed, streamPrunedThrough, s.now())
	return translate(err)
}

// Locks holds session-level advisory locks on one dedicated connection, for a component that owns
// something for as long as it runs (the relay's workspace shards across replicas). Every lock
// ends when Close is called or the connection is lost; Check reports the loss. It is the one use
// of the database outside WithTx, because a transaction cannot hold a lock across publishes.
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
