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
// partial indexes (migrations 0018, 0025), or kept (deleted_roots, migration 0029, for a reader
// who never read it): the work is the deletions and the reader's own posts since they last
// read, never the history (docs/performance.md, "Unread counts").
// The subqueries need no workspace filter of their own: a conversation's messages share its
// workspace, and the outer query keeps only the workspace's conversations.
func (tx *Reader) readStates(ctx context.Context, s readScope, userID, workspaceID string, ids []string) (map[string]ReadState, error) {
	rows, err := tx.query(ctx, `WITH RECURSIVE `+ownRoots(s, "$2")+`
		SELECT c.id, c.last_seq, coalesce(r.last_read_seq, 0),
			`+unreadCount(s, "c", "coalesce(r.last_read_seq, 0)", "$2", "o.seq")+`
		FROM `+s.table+` c LEFT JOIN read_receipts r ON r.scope_id = c.id AND r.user_id = $2
			LEFT JOIN own_roots o ON o.place = c.id
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
// of its row (channels or dms, with last_seq and deleted_roots), mark the reader's mark, userID
// the reader and ownSeq their newest live root there (ownRoots; NULL for none), as SQL
// expressions. A conversation read to its end costs no probe at all; one never read takes its
// deletions from the place's counter (every deleted root is after a mark of 0), one read
// part-way counts those after its mark; the reader's own roots are counted only where their
// newest is after the mark.
func unreadCount(s readScope, place, mark, userID, ownSeq string) string {
	return `CASE WHEN ` + place + `.last_seq <= ` + mark + ` THEN 0 ELSE ` + place + `.last_seq - ` + mark + `
		- CASE WHEN ` + mark + ` = 0 THEN ` + place + `.deleted_roots ELSE (SELECT count(*) FROM messages m
			WHERE m.` + s.column + ` = ` + place + `.id AND m.channel_seq > ` + mark + ` AND m.deleted_at IS NOT NULL) END
		- CASE WHEN coalesce(` + ownSeq + `, 0) <= ` + mark + ` THEN 0 ELSE (SELECT count(*) FROM messages m
			WHERE m.` + s.column + ` = ` + place + `.id AND m.author_id = ` + userID + `
			AND m.channel_seq > ` + mark + ` AND m.deleted_at IS NULL) END END`
}

// mentionCount is the SQL of a channel's mention count for its reader: the live root messages by
// others after the mark that mention them, by the rule of the Mentions view (mentionStatement):
// their current handle, or a broadcast (@here, @channel, @everyone) when present (an SQL
// condition: they have not left the channel) and posted at or after since (when they joined the
// workspace, or were added to a private channel). place is the alias of the channels row, mark
// and userID SQL expressions as for unreadCount. It reads message_mentions_channel_seq_idx
// alone (migration 0032: rows exist only for live messages and carry seq and author): the
// mentions after the mark, never the history; a channel read to its end probes nothing. The
// web client's live count (store.js, bumpPlace) is this rule; in a direct conversation every
// message is written to its members, so there the count is the unread count (DM.MentionCount).
func mentionCount(place, mark, userID, present, since string) string {
	return `CASE WHEN ` + place + `.last_seq <= ` + mark + ` THEN 0 ELSE (SELECT count(DISTINCT mm.seq) FROM message_mentions mm
		WHERE mm.channel_id = ` + place + `.id AND mm.seq > ` + mark + ` AND mm.author_id <> ` + userID + `
			AND (mm.name = (SELECT handle FROM users WHERE id = ` + userID + `)
				OR mm.name IN ` + broadcastNames + ` AND ` + present + ` AND mm.created_at >= ` + since + `)) END`
}

// ownRoots is a WITH RECURSIVE query, own_roots(place, seq): each conversation of the kind s
// where userID (an SQL expression) has a live root, with the newest one's sequence. It skips
// from one conversation to the next down messages_author_channel_idx / messages_author_dm_idx
// (author, place, seq), one descent each: its work is the conversations the reader posted in,
// where probing each listed conversation for their posts cost one descent per conversation
// listed (3,000 index pages for 1,000 channels).
func ownRoots(s readScope, userID string) string {
	newest := func(below string) string {
		return `SELECT m.` + s.column + ` AS place, m.channel_seq AS seq FROM messages m
			WHERE m.author_id = ` + userID + ` AND m.` + s.column + ` ` + below + ` AND m.channel_seq IS NOT NULL
				AND m.deleted_at IS NULL
			ORDER BY m.` + s.column + ` DESC, m.channel_seq DESC LIMIT 1`
	}
	return `own_roots(place, seq) AS ((` + newest("IS NOT NULL") + `)
		UNION ALL
		SELECT n.place, n.seq FROM own_roots o, LATERAL (` + newest("< o.place") + `) n)`
}

// deletedRootsAdd keeps a conversation's count of deleted roots (channels.deleted_roots,
// dms.deleted_roots) when a root is deleted (+1) or brought back (-1), in the transaction of
// that change: a never-read conversation's unread count is taken from it (unreadCount).
func (tx *Tx) deletedRootsAdd(ctx context.Context, channelID, dmID string, delta int) error {
	table, id := "channels", channelID
	if dmID != "" {
		table, id = "dms", dmID
	}
	_, err := tx.exec(ctx, `UPDATE `+table+` SET deleted_roots = deleted_roots + $2 WHERE id = $1`, id, delta)
	return err
}
