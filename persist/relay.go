package persist

import (
	"context"

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
