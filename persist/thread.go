package persist

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// threadRingSize is how many recent reply authors a thread state keeps.
const threadRingSize = 5

// Thread is a root message with one window of its replies.
type Thread struct {
	Root        Message
	ThreadState ThreadState
	Replies     Page
}

// ThreadGet returns a root message the actor may read, its thread state and a window of its
// replies (tombstones included). Codes: invalid_request (the message is a reply), not_found,
// forbidden.
func (tx *Tx) ThreadGet(ctx context.Context, actor Actor, rootID string, w Window) (Thread, error) {
	root, _, err := tx.messageFor(ctx, actor, rootID, accessRead, "")
	if err != nil {
		return Thread{}, err
	}
	if !root.IsRoot() {
		return Thread{}, Invalid("that message is a reply; open the thread of its root %s", root.ThreadRootID)
	}
	page, err := tx.pageLoad(ctx, actor.UserID, root.WorkspaceID, repliesOf(root.ID), w)
	if err != nil {
		return Thread{}, err
	}
	root, err = tx.messageHydrate(ctx, actor, root)
	return Thread{Root: root, ThreadState: *root.ThreadState, Replies: page}, err
}

// ReplyCreated is the outcome of a thread reply. Replayed means Message is the original of an
// earlier reply with the same nonce and nothing was written (Events is empty).
type ReplyCreated struct {
	Message     Message
	ThreadState ThreadState
	Events      []Event
	Replayed    bool
}

// EachEvent hands over the reply's events.
func (r *ReplyCreated) EachEvent(place func(*Event)) {
	for i := range r.Events {
		place(&r.Events[i])
	}
}

// ThreadReplyCreate posts a reply to a root message under the write guard of the root's place.
// The root's thread state (its thread_seq counter, reply count, last reply time and recent
// authors) is updated in this transaction, and thread.reply_created and thread.state_updated
// are appended. Codes: invalid_request (empty body, the target is a reply), not_found,
// forbidden, rate_limited, conflict (nonce reused), message_deleted (the root or the quote).
func (tx *Tx) ThreadReplyCreate(ctx context.Context, actor Actor, rootID string, in MessageCreateParams) (ReplyCreated, error) {
	if err := validateMessageInput(in.Body, in.Nonce); err != nil {
		return ReplyCreated{}, err
	}
	// FOR SHARE: the root cannot be deleted or edited under a reply in flight.
	root, err := tx.messageLoad(ctx, rootID, "FOR SHARE OF m")
	if err != nil {
		return ReplyCreated{}, err
	}
	digest := nonceDigest(root.Place(), root.ID, in.Body, in.QuotedMessageID, MessageKindMessage, "")
	if orig, ok, err := tx.nonceReplay(ctx, actor, in.Nonce, digest); ok || err != nil {
		if err != nil {
			return ReplyCreated{}, err
		}
		st, err := tx.threadStateGet(ctx, root.WorkspaceID, root.ID)
		return ReplyCreated{Message: orig, ThreadState: st, Replayed: true}, err
	}
	st, _, err := tx.placeFor(ctx, actor, root.Place(), accessPost)
	if err != nil {
		return ReplyCreated{}, err
	}
	if !root.IsRoot() {
		return ReplyCreated{}, Invalid("replies cannot have replies; reply to the thread root %s", root.ThreadRootID)
	}
	if root.DeletedAt != nil {
		return ReplyCreated{}, Errorf(CodeMessageDeleted, "the thread's root message was deleted")
	}
	if err := tx.quoteCheck(ctx, actor, st.WorkspaceID, in.QuotedMessageID); err != nil {
		return ReplyCreated{}, err
	}
	ts := ThreadState{RootMessageID: root.ID}
	var threadSeq int64
	if err := tx.queryRow(ctx, `INSERT INTO thread_states AS ts (root_message_id, workspace_id, last_thread_seq,
			reply_count, last_reply_at, last_reply_author_ids)
		VALUES ($1, $2, 1, 1, $3, ARRAY[$4::text])
		ON CONFLICT (root_message_id) DO UPDATE SET
			last_thread_seq = ts.last_thread_seq + 1,
			reply_count = ts.reply_count + 1,
			last_reply_at = EXCLUDED.last_reply_at,
			last_reply_author_ids = (array_prepend($4::text, array_remove(ts.last_reply_author_ids, $4::text)))[1:$5]
		RETURNING last_thread_seq, reply_count, last_reply_at, last_reply_author_ids`,
		root.ID, root.WorkspaceID, tx.now, actor.UserID, threadRingSize).Scan(
		&threadSeq, &ts.ReplyCount, &ts.LastReplyAt, &ts.LastReplyAuthorIDs); err != nil {
		return ReplyCreated{}, err
	}
	if root.DirectConversationID != "" {
		if _, err := tx.exec(ctx, `UPDATE dms SET last_activity_at = $3 WHERE workspace_id = $1 AND id = $2`,
			root.WorkspaceID, root.DirectConversationID, tx.now); err != nil {
			return ReplyCreated{}, err
		}
	}
	id := NewID(PrefixMessage, tx.now)
	reply, err := tx.messageInsert(ctx, `SELECT $1::bigint AS seq`, threadSeq, messageRow{id: id,
		workspaceID: root.WorkspaceID, place: root.Place(), authorID: actor.UserID, parentID: root.ID,
		threadRootID: root.ID, kind: MessageKindMessage, body: in.Body, quotedID: in.QuotedMessageID,
		nonce: in.Nonce, digest: digest})
	if err != nil {
		return ReplyCreated{}, err
	}
	if err := tx.threadFollow(ctx, root, actor.UserID, threadSeq, tx.now, in.Body, false); err != nil {
		return ReplyCreated{}, err
	}
	out := ReplyCreated{Message: reply, ThreadState: ts}
	created, err := tx.EventAppend(ctx, reply.messageEvent("thread.reply_created", actor, &ts))
	if err != nil {
		return ReplyCreated{}, err
	}
	updated, err := tx.EventAppend(ctx, root.threadStateEvent(actor.UserID, ts))
	out.Events = []Event{created, updated}
	return out, err
}

// threadStateGet reads a root's thread state; a root without replies has an empty one.
func (tx *Tx) threadStateGet(ctx context.Context, workspaceID, rootID string) (ThreadState, error) {
	ts := ThreadState{RootMessageID: rootID, LastReplyAuthorIDs: []string{}}
	err := tx.queryRow(ctx, `SELECT reply_count, last_reply_at, last_reply_author_ids FROM thread_states
		WHERE workspace_id = $1 AND root_message_id = $2`, workspaceID, rootID).Scan(
		&ts.ReplyCount, &ts.LastReplyAt, &ts.LastReplyAuthorIDs)
	if errors.Is(err, pgx.ErrNoRows) {
		return ts, nil
	}
	return ts, err
}
