package persist

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// The Threads view (issue 30, migration 0026): the threads a person follows — they started the
// root, replied, or were @mentioned in the root or a reply — newest activity first, with how far
// they have read each. Every reply's transaction writes its followers' rows and copies the
// thread's last sequence and activity time into each, so a person's threads page by their own
// index and the unread count is kept, not counted (docs/performance.md, "Unread counts").

// Thread listing limits.
const (
	// DefaultThreadListLimit and MaxThreadListLimit bound a page of threads.
	DefaultThreadListLimit = 20
	MaxThreadListLimit     = 50
	// ThreadListReplies is how many of a thread's latest live replies a listing carries.
	ThreadListReplies = 3
	// MaxThreadMentions is how many people one message's @mentions can make followers of its
	// thread: each follower's row is written by every later reply.
	MaxThreadMentions = 50
)

// FollowedThread is one thread of a person's Threads view: the root, its latest live replies
// (ascending), its state, and the person's read position. UnreadCount is the live replies by
// others after LastReadSeq.
type FollowedThread struct {
	Root        Message     `json:"root"`
	Replies     []Message   `json:"replies"`
	ThreadState ThreadState `json:"thread_state"`
	LastSeq     int64       `json:"last_seq"`
	LastReadSeq int64       `json:"last_read_seq"`
	UnreadCount int64       `json:"unread_count"`
	ActivityAt  time.Time   `json:"activity_at"`
}

// ThreadListPage is one page of a person's threads. NextCursor is nil on the last page;
// UnreadThreads counts every thread of theirs with unread replies (not only this page's).
type ThreadListPage struct {
	Threads       []FollowedThread `json:"threads"`
	NextCursor    *string          `json:"next_cursor"`
	UnreadThreads int64            `json:"unread_threads"`
}

// ThreadListParams asks for a page of threads: Limit 1..MaxThreadListLimit (0 is the default,
// more is the maximum), Cursor the next_cursor of the previous page.
type ThreadListParams struct {
	WorkspaceID string
	Limit       int
	Cursor      string
}

// threadFollow records, in the transaction that adds reply seq (by replierID, at) to root, who
// follows the thread: the root's author, the replier and the people the root or the reply
// @mention by handle (members of the workspace; whether they may read the place is decided when
// listing, since it changes). The replier's read position moves to their reply, so one's own
// replies are never after one's mark; with readAll (imported history) everyone's does. Every
// row of the thread takes the new last sequence and activity time.
func (tx *Tx) threadFollow(ctx context.Context, root Message, replierID string, seq int64, at time.Time, replyBody string, readAll bool) error {
	handles := MentionedHandles(root.Body, MaxThreadMentions)
	for _, h := range MentionedHandles(replyBody, MaxThreadMentions) {
		if len(handles) < 2*MaxThreadMentions && !slices.Contains(handles, h) {
			handles = append(handles, h)
		}
	}
	if _, err := tx.exec(ctx, `INSERT INTO thread_follows AS f (root_message_id, user_id, workspace_id, following,
			last_seq, activity_at, last_read_seq, last_read_at)
		SELECT $1, who.id, $2, true, $4::bigint, $5::timestamptz, CASE WHEN who.id = $3 OR $8::boolean THEN $4::bigint ELSE 0 END,
			CASE WHEN who.id = $3 OR $8::boolean THEN $5::timestamptz END
		FROM (SELECT $3::text AS id UNION SELECT $6::text
			UNION SELECT u.id FROM users u JOIN workspace_members wm ON wm.workspace_id = $2 AND wm.user_id = u.id
				WHERE u.handle = ANY($7::text[]) AND u.deleted_at IS NULL) who
		ON CONFLICT (root_message_id, user_id) DO UPDATE SET following = true,
			last_seq = greatest(f.last_seq, EXCLUDED.last_seq), activity_at = greatest(f.activity_at, EXCLUDED.activity_at),
			last_read_seq = greatest(f.last_read_seq, EXCLUDED.last_read_seq),
			last_read_at = CASE WHEN EXCLUDED.last_read_seq > f.last_read_seq THEN EXCLUDED.last_read_at ELSE f.last_read_at END`,
		root.ID, root.WorkspaceID, replierID, seq, at, root.AuthorID, handles, readAll); err != nil {
		return err
	}
	readTo := "last_read_seq"
	if readAll {
		readTo = "greatest(last_read_seq, $2::bigint)"
	}
	_, err := tx.exec(ctx, `UPDATE thread_follows SET last_seq = $2::bigint, activity_at = greatest(activity_at, $3::timestamptz),
			last_read_seq = `+readTo+`
		WHERE root_message_id = $1 AND last_seq < $2`, root.ID, seq, at)
	return err
}

// threadFollowEdit makes the people an edit newly @mentions by handle followers of the edited
// message's thread, in the edit's transaction, as a reply mentioning them would: a reply's
// thread, or a root's once it has replies (until then its first reply reads the root's
// mentions). A newcomer's position is 0, the thread unread to them, as for someone a reply
// mentions. A mention the edit removes unfollows no one: they may have replied or been mentioned
// elsewhere in the thread, and following is never taken back.
func (tx *Tx) threadFollowEdit(ctx context.Context, m Message, oldBody string) error {
	old := MentionedHandles(oldBody, MaxThreadMentions)
	var added []string
	for _, h := range MentionedHandles(m.Body, MaxThreadMentions) {
		if !slices.Contains(old, h) {
			added = append(added, h)
		}
	}
	if len(added) == 0 {
		return nil
	}
	rootID := m.ID
	if !m.IsRoot() {
		rootID = m.ThreadRootID
	}
	// FOR SHARE waits for a reply in flight (its upsert holds the row) and holds off the next, so
	// the rows written here take the thread's last sequence and every later reply moves them on.
	var last int64
	var at time.Time
	err := tx.queryRow(ctx, `SELECT last_thread_seq, last_reply_at FROM thread_states
		WHERE workspace_id = $1 AND root_message_id = $2 FOR SHARE`, m.WorkspaceID, rootID).Scan(&last, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = tx.exec(ctx, `INSERT INTO thread_follows AS f (root_message_id, user_id, workspace_id, following,
			last_seq, activity_at, last_read_seq)
		SELECT $1, u.id, $2, true, $3, $4, 0
		FROM users u JOIN workspace_members wm ON wm.workspace_id = $2 AND wm.user_id = u.id
		WHERE u.handle = ANY($5::text[]) AND u.deleted_at IS NULL
		ON CONFLICT (root_message_id, user_id) DO UPDATE SET following = true`,
		rootID, m.WorkspaceID, last, at, added)
	return err
}

// ThreadReadMark records that the actor has read the thread of rootID up to reply seq (a
// thread_seq). Positions only move forward and never pass the thread's last reply; marking a
// thread one does not follow keeps the position without following it. Reading needs no write
// authority. Codes: invalid_request (negative seq, a reply), not_found, forbidden.
func (tx *Tx) ThreadReadMark(ctx context.Context, actor Actor, rootID string, seq int64) (Receipt, error) {
	if seq < 0 {
		return Receipt{}, Invalid("seq must be zero or more")
	}
	root, _, err := tx.messageFor(ctx, actor, rootID, accessRead, "")
	if err != nil {
		return Receipt{}, err
	}
	if !root.IsRoot() {
		return Receipt{}, Invalid("that message is a reply; mark the thread of its root %s", root.ThreadRootID)
	}
	var last int64
	activity := root.CreatedAt
	err = tx.queryRow(ctx, `SELECT last_thread_seq, last_reply_at FROM thread_states WHERE workspace_id = $1 AND root_message_id = $2`,
		root.WorkspaceID, root.ID).Scan(&last, &activity)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return Receipt{}, err
	}
	r := Receipt{ScopeID: root.ID, UserID: actor.UserID}
	err = tx.queryRow(ctx, `INSERT INTO thread_follows AS f (root_message_id, user_id, workspace_id, following,
			last_seq, activity_at, last_read_seq, last_read_at)
		VALUES ($1, $2, $3, false, $4, $5, $6, $7)
		ON CONFLICT (root_message_id, user_id) DO UPDATE SET last_read_seq = EXCLUDED.last_read_seq, last_read_at = EXCLUDED.last_read_at
			WHERE f.last_read_seq < EXCLUDED.last_read_seq OR f.last_read_at IS NULL
		RETURNING last_read_seq, last_read_at`, root.ID, actor.UserID, root.WorkspaceID, last, activity, min(seq, last), tx.now).
		Scan(&r.LastReadSeq, &r.LastReadAt)
	if errors.Is(err, pgx.ErrNoRows) {
		// The position is already at or past seq: answer with it unchanged.
		err = tx.queryRow(ctx, `SELECT last_read_seq, last_read_at FROM thread_follows WHERE root_message_id = $1 AND user_id = $2`,
			root.ID, actor.UserID).Scan(&r.LastReadSeq, &r.LastReadAt)
	}
	return r, err
}

// threadUnread is the SQL of a followed thread's unread count, f the thread_follows row: its
// replies take every thread_seq from 1 to last_seq and are never removed, and one's own replies
// are never after one's mark (threadFollow), so the unread replies are those after the mark less
// the deleted ones, counted from the small partial index of deleted replies.
const threadUnread = `CASE WHEN f.last_seq <= f.last_read_seq THEN 0 ELSE f.last_seq - f.last_read_seq
	- (SELECT count(*) FROM messages d WHERE d.thread_root_id = f.root_message_id AND d.thread_seq IS NOT NULL
		AND d.thread_seq > f.last_read_seq AND d.deleted_at IS NOT NULL) END`

// ThreadList returns a page of the threads the actor follows in a workspace, newest activity
// first, leaving out those in places the actor may not read now (a private channel they left,
// any channel but the guest channel for a guest, direct conversations for a bot token without
// dms:read). Codes: invalid_request (limit, cursor), not_found, forbidden.
func (tx *Tx) ThreadList(ctx context.Context, actor Actor, p ThreadListParams) (ThreadListPage, error) {
	if p.Limit < 0 {
		return ThreadListPage{}, Invalid("limit must be 1 to %d", MaxThreadListLimit)
	}
	p.Limit = min(p.Limit, MaxThreadListLimit)
	if p.Limit == 0 {
		p.Limit = DefaultThreadListLimit
	}
	if p.WorkspaceID == "" {
		return ThreadListPage{}, Invalid("workspace_id is required")
	}
	member, err := tx.requireMemberToRead(ctx, p.WorkspaceID, actor)
	if err != nil {
		return ThreadListPage{}, err
	}
	bound := threadCursorBound(actor.UserID, p.WorkspaceID)
	args := []any{p.WorkspaceID, actor.UserID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	readable := readablePlaces("r", actor, member.Role == RoleGuest, arg)
	countArgs := append([]any(nil), args...)
	keyset := "true"
	if p.Cursor != "" {
		c, err := decodeThreadCursor(p.Cursor, bound)
		if err != nil {
			return ThreadListPage{}, err
		}
		keyset = `(f.activity_at, f.root_message_id) < (` + arg(c.At) + `, ` + arg(c.ID) + `)`
	}
	out := ThreadListPage{Threads: []FollowedThread{}}
	// Only the rows of the partial index of threads with news are read for the count.
	if err := tx.queryRow(ctx, `SELECT count(*) FROM thread_follows f JOIN messages r ON r.id = f.root_message_id
		WHERE f.workspace_id = $1 AND f.user_id = $2 AND f.following AND f.last_seq > f.last_read_seq
			AND `+readable+` AND `+threadUnread+` > 0`, countArgs...).
		Scan(&out.UnreadThreads); err != nil {
		return ThreadListPage{}, err
	}
	rows, err := tx.query(ctx, `SELECT f.root_message_id, f.activity_at, f.last_seq, f.last_read_seq, `+threadUnread+`
		FROM thread_follows f JOIN messages r ON r.id = f.root_message_id
		WHERE f.workspace_id = $1 AND f.user_id = $2 AND f.following AND `+keyset+` AND `+readable+`
		ORDER BY f.activity_at DESC, f.root_message_id DESC LIMIT `+arg(p.Limit+1), args...)
	if err != nil {
		return ThreadListPage{}, err
	}
	var ids []string
	for rows.Next() {
		var t FollowedThread
		if err := rows.Scan(&t.Root.ID, &t.ActivityAt, &t.LastSeq, &t.LastReadSeq, &t.UnreadCount); err != nil {
			rows.Close()
			return ThreadListPage{}, err
		}
		out.Threads = append(out.Threads, t)
		ids = append(ids, t.Root.ID)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return ThreadListPage{}, err
	}
	if len(out.Threads) > p.Limit {
		out.Threads, ids = out.Threads[:p.Limit], ids[:p.Limit]
		last := out.Threads[p.Limit-1]
		next := encodeThreadCursor(threadCursor{Bound: bound, At: last.ActivityAt, ID: last.Root.ID})
		out.NextCursor = &next
	}
	if len(ids) == 0 {
		return out, nil
	}
	return out, tx.threadListHydrate(ctx, actor, ids, out.Threads)
}

// threadListHydrate fills each thread's root and latest live replies, hydrated, in three
// statements whatever the page's size.
func (tx *Tx) threadListHydrate(ctx context.Context, actor Actor, ids []string, threads []FollowedThread) error {
	roots, err := tx.scanMessages(tx.query(ctx, `SELECT `+messageColumns+` FROM `+messageFrom+` WHERE m.id = ANY($1)`, ids))
	if err != nil {
		return err
	}
	replies, err := tx.scanMessages(tx.query(ctx, `SELECT `+messageColumns+`
		FROM unnest($1::text[]) AS x(id) CROSS JOIN LATERAL (
			SELECT l.id, l.route_id, l.workspace_id, l.channel_id, l.dm_id, l.author_id, l.parent_message_id, l.thread_root_id,
				l.channel_seq, l.thread_seq, l.kind, l.body, l.quoted_message_id, l.nonce, l.created_at, l.edited_at, l.deleted_at
			FROM messages l WHERE l.thread_root_id = x.id AND l.thread_seq IS NOT NULL AND l.deleted_at IS NULL
			ORDER BY l.thread_seq DESC LIMIT `+strconv.Itoa(ThreadListReplies)+`) m
		JOIN users u ON u.id = m.author_id LEFT JOIN thread_states ts ON ts.root_message_id = m.id
		ORDER BY m.thread_root_id, m.thread_seq`, ids))
	if err != nil {
		return err
	}
	all := append(roots, replies...)
	if err := tx.messagesHydrate(ctx, actor.UserID, all); err != nil {
		return err
	}
	at := make(map[string]int, len(threads))
	for i, t := range threads {
		at[t.Root.ID] = i
	}
	for _, m := range all[:len(roots)] {
		t := &threads[at[m.ID]]
		t.Root, t.ThreadState = m, *m.ThreadState
		t.Replies = []Message{}
	}
	for _, m := range all[len(roots):] {
		t := &threads[at[m.ThreadRootID]]
		t.Replies = append(t.Replies, m)
	}
	return nil
}

// threadCursor is the keyset position after a page's last thread, bound to the person and
// workspace that listed it.
type threadCursor struct {
	Bound string    `json:"b"`
	At    time.Time `json:"t"`
	ID    string    `json:"i"`
}

func threadCursorBound(userID, workspaceID string) string {
	sum := sha256.Sum256([]byte(strconv.Quote(userID) + strconv.Quote(workspaceID)))
	return hex.EncodeToString(sum[:12])
}

func encodeThreadCursor(c threadCursor) string {
	raw, _ := json.Marshal(c) // a struct of plain fields always marshals
	return base64.RawURLEncoding.EncodeToString(raw)
}

// decodeThreadCursor reads a cursor and checks it belongs to this person's listing of this
// workspace. Codes: invalid_request.
func decodeThreadCursor(s, bound string) (threadCursor, error) {
	var c threadCursor
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(raw, &c) != nil || c.Bound != bound || c.ID == "" || !utf8.ValidString(c.ID) ||
		strings.IndexByte(c.ID, 0) >= 0 || c.At.IsZero() {
		return threadCursor{}, Invalid("cursor is not one this server issued for your threads here; start again without it")
	}
	return c, nil
}
