package persist

import (
	"context"
	"time"

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
	// StreamRetired says the relay deleted the stream on purpose (RelayStreamRetired) and has
	// not created it again since.
	StreamRetired bool
	// StreamFirst is the first cursor the stream was created with (0: unknown, a stream created
	// before it was recorded, which started at the oldest retained cursor).
	StreamFirst int64
}

const relayStateColumns = `h.workspace_id, h.last_cursor, h.pruned_through,
	coalesce(p.relayed_cursor, 0), coalesce(p.stream_pruned_through, 0),
	coalesce(p.stream_retired, false), coalesce(p.stream_first, 0)`

func scanRelayStates(rows pgx.Rows) ([]RelayState, error) {
	defer rows.Close()
	var out []RelayState
	for rows.Next() {
		var s RelayState
		if err := rows.Scan(&s.WorkspaceID, &s.Head, &s.PrunedThrough, &s.Relayed, &s.StreamPrunedThrough,
			&s.StreamRetired, &s.StreamFirst); err != nil {
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

// RelayStreamCreated records that the relay created a workspace's stream starting at cursor
// first (its stream is no longer retired). Only the relay owning the workspace's shard writes it.
//
// Its commit does not wait for the disk (relaxedCommit): a record lost in a crash leaves a stream
// the log says is retired, or one whose first cursor is newer than the one recorded; the relay's
// next pass verifies the stream, and such a stream is rebuilt from the log (nothing lost, nothing
// twice: sequence == cursor). A workspace waking from rest thus pays no disk flush for it.
func (s *Store) RelayStreamCreated(ctx context.Context, workspaceID string, first int64) error {
	_, err := s.pool.Exec(ctx, `WITH `+relaxedCommit+`
		INSERT INTO relay_positions (workspace_id, relayed_cursor, stream_first, updated_at)
		SELECT $1, $2, $3, $4 FROM relaxed
		ON CONFLICT (workspace_id) DO UPDATE SET stream_retired = false, stream_first = $3, updated_at = $4`,
		workspaceID, max(first-1, 0), first, s.now())
	return translate(err)
}

// RelayIdle lists up to limit workspaces whose stream exists (as far as the relay recorded), has
// relayed the whole log and every prune, and has not moved for idle (by the store's clock): the
// candidates for retirement, the longest idle first.
func (s *Store) RelayIdle(ctx context.Context, idle time.Duration, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT p.workspace_id
		FROM relay_positions p JOIN event_heads h ON h.workspace_id = p.workspace_id
		WHERE NOT p.stream_retired AND p.updated_at < $1
			AND h.last_cursor = p.relayed_cursor AND h.pruned_through = p.stream_pruned_through
		ORDER BY p.updated_at LIMIT $2`, s.now().Add(-idle), limit)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, translate(err)
}

// RelayStreamRetired records that the relay is about to delete a workspace's stream, idle and
// fully relayed at cursor relayed. It changes nothing and reports false when the workspace
// moved meanwhile (its head or position is no longer relayed), so no event is left behind in a
// stream about to go. Recorded before the deletion: a crash in between leaves a stream marked
// retired, which the relay's next pass finds and keeps.
func (s *Store) RelayStreamRetired(ctx context.Context, workspaceID string, relayed int64) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE relay_positions p SET stream_retired = true, updated_at = $3
		FROM event_heads h
		WHERE p.workspace_id = $1 AND h.workspace_id = p.workspace_id AND NOT p.stream_retired
			AND p.relayed_cursor = $2 AND h.last_cursor = $2 AND h.pruned_through = p.stream_pruned_through`,
		workspaceID, relayed, s.now())
	return tag.RowsAffected() == 1, translate(err)
}

// RelayStreamKept moves a workspace's idle mark to now: its stream was found in use (a client's
// consumer on it), so the retirement sweep looks at it again only after another idle period.
func (s *Store) RelayStreamKept(ctx context.Context, workspaceID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE relay_positions SET updated_at = $2 WHERE workspace_id = $1`, workspaceID, s.now())
	return translate(err)
}

// RelaySeedRetired records the given workspaces as the relay leaves a dormant one: its log
// relayed up to its head, its stream retired (created again at its next event, after the head).
// For seeding many dormant workspaces at once (`natter bench --mode tenants`) while no relay
// runs, instead of creating and retiring a stream for each.
func (tx *Tx) RelaySeedRetired(ctx context.Context, workspaceIDs []string) error {
	_, err := tx.exec(ctx, `INSERT INTO relay_positions (workspace_id, relayed_cursor, stream_pruned_through, stream_retired, stream_first, updated_at)
		SELECT h.workspace_id, h.last_cursor, h.pruned_through, true, 1, $2 FROM event_heads h WHERE h.workspace_id = ANY($1)
		ON CONFLICT (workspace_id) DO UPDATE SET relayed_cursor = excluded.relayed_cursor,
			stream_pruned_through = excluded.stream_pruned_through, stream_retired = true, updated_at = excluded.updated_at`,
		workspaceIDs, tx.now)
	return err
}
