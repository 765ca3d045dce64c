package persist

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Receipt is how far a person has read a channel or direct conversation (the scope).
type Receipt struct {
	ScopeID     string    `json:"scope_id"`
	UserID      string    `json:"user_id"`
	LastReadSeq int64     `json:"last_read_seq"`
	LastReadAt  time.Time `json:"last_read_at"`
}

// ReadState is a listing's view of one conversation for one person: its last sequence, how far
// they have read, and how many messages after that are unread (live root messages by others).
type ReadState struct {
	LastSeq     int64 `json:"last_seq"`
	LastReadSeq int64 `json:"last_read_seq"`
	UnreadCount int64 `json:"unread_count"`
}

// ReadMark records that the actor has read a place up to seq. Receipts only move forward (a
// lower seq changes nothing) and never pass the place's last sequence. Reading needs no write
// authority. Codes: invalid_request (negative seq), those of the read guards.
func (tx *Tx) ReadMark(ctx context.Context, actor Actor, p Place, seq int64) (Receipt, error) {
	if seq < 0 {
		return Receipt{}, Invalid("seq must be zero or more")
	}
	st, _, err := tx.placeFor(ctx, actor, p, accessRead)
	if err != nil {
		return Receipt{}, err
	}
	seq = min(seq, st.LastSeq)
	r := Receipt{ScopeID: p.ID(), UserID: actor.UserID}
	err = tx.queryRow(ctx, `INSERT INTO read_receipts AS r (scope_id, user_id, workspace_id, last_read_seq, last_read_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (scope_id, user_id) DO UPDATE SET last_read_seq = EXCLUDED.last_read_seq, last_read_at = EXCLUDED.last_read_at
			WHERE r.last_read_seq < EXCLUDED.last_read_seq
		RETURNING last_read_seq, last_read_at`, r.ScopeID, r.UserID, st.WorkspaceID, seq, tx.now).Scan(&r.LastReadSeq, &r.LastReadAt)
	if errors.Is(err, pgx.ErrNoRows) {
		// The receipt is already at or past seq: answer with it unchanged.
		err = tx.queryRow(ctx, `SELECT last_read_seq, last_read_at FROM read_receipts
			WHERE workspace_id = $1 AND scope_id = $2 AND user_id = $3`, st.WorkspaceID, r.ScopeID, r.UserID).Scan(&r.LastReadSeq, &r.LastReadAt)
	}
	return r, err
}

// readScope names the table of a kind of conversation and the messages column pointing at it.
type readScope struct{ table, column string }

var (
	channelScope = readScope{table: "channels", column: "channel_id"}
	dmScope      = readScope{table: "dms", column: "dm_id"}
)

// readStates reads the actor's read state of each conversation without counting its history.
// A conversation's roots take every sequence 1..last_seq (gapless, never removed; replies take
// none), so the roots after the reader's mark R are last_seq − R, and the unread ones are those
// less the deleted ones and the reader's own live ones after R. Both are counted from small
// partial indexes (migration 0018): the work is the deletions and the reader's own posts since
// they last read, never the history (docs/performance.md, "Unread counts").
// The subqueries need no workspace filter of their own: a conversation's messages share its
// workspace, and the outer query keeps only the workspace's conversations.
func (tx *Tx) readStates(ctx context.Context, s readScope, userID, workspaceID string, ids []string) (map[string]ReadState, error) {
	rows, err := tx.query(ctx, `SELECT c.id, c.last_seq, coalesce(r.last_read_seq, 0),
			`+unreadCount(s, "c", "coalesce(r.last_read_seq, 0)", "$2")+`
		FROM `+s.table+` c LEFT JOIN read_receipts r ON r.scope_id = c.id AND r.user_id = $2
		WHERE c.workspace_id = $1 AND c.id = ANY($3)`, workspaceID, userID, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]ReadState, len(ids))
	for rows.Next() {
		var id string
		var st ReadState
		if err := rows.Scan(&id, &st.LastSeq, &st.LastReadSeq, &st.UnreadCount); err != nil {
			return nil, err
		}
		out[id] = st
	}
	return out, rows.Err()
}

// unreadCount is the SQL of a conversation's unread count (see readStates): place is the alias
// of its row (channels or dms, with last_seq), mark the reader's mark and userID the reader, as
// SQL expressions. A conversation read to its end costs no probe at all.
func unreadCount(s readScope, place, mark, userID string) string {
	return `CASE WHEN ` + place + `.last_seq <= ` + mark + ` THEN 0 ELSE ` + place + `.last_seq - ` + mark + `
		- (SELECT count(*) FROM messages m WHERE m.` + s.column + ` = ` + place + `.id AND m.channel_seq > ` + mark + `
			AND m.deleted_at IS NOT NULL)
		- (SELECT count(*) FROM messages m WHERE m.` + s.column + ` = ` + place + `.id AND m.author_id = ` + userID + `
			AND m.channel_seq > ` + mark + ` AND m.deleted_at IS NULL) END`
}
