package persist

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Message kinds. The agent kinds are durable agent activity: only a bot token holding
// agent_activity:write may post them.
const (
	MessageKindMessage         = "message"
	MessageKindAgentCommentary = "agent_commentary"
	MessageKindAgentTool       = "agent_tool"
)

// Message limits.
const (
	// MaxBodyLength bounds a message body, in Unicode characters.
	MaxBodyLength = 40000
	// MaxNonceLength bounds an idempotency nonce, in characters.
	MaxNonceLength = 128
)

// Message is a root message or a thread reply, in its API shape. Roots carry ChannelSeq (the
// sequence of their channel or direct conversation) and ThreadState; replies carry
// ParentMessageID and ThreadSeq. A deleted message is a tombstone: empty body, DeletedAt set,
// sequences kept, no reactions.
type Message struct {
	ID                   string            `json:"id"`
	RouteID              string            `json:"route_id,omitempty"`
	WorkspaceID          string            `json:"workspace_id"`
	ChannelID            string            `json:"channel_id,omitempty"`
	DirectConversationID string            `json:"direct_conversation_id,omitempty"`
	AuthorID             string            `json:"author_id"`
	Author               PublicUser        `json:"author"`
	ParentMessageID      *string           `json:"parent_message_id"`
	ThreadRootID         string            `json:"thread_root_id"`
	ChannelSeq           *int64            `json:"channel_seq"`
	ThreadSeq            *int64            `json:"thread_seq"`
	Body                 string            `json:"body"`
	BodyFormat           string            `json:"body_format"`
	Kind                 string            `json:"kind"`
	CreatedAt            time.Time         `json:"created_at"`
	EditedAt             *time.Time        `json:"edited_at,omitempty"`
	DeletedAt            *time.Time        `json:"deleted_at,omitempty"`
	QuotedMessageID      string            `json:"quoted_message_id,omitempty"`
	Nonce                string            `json:"nonce,omitempty"`
	Reactions            []ReactionSummary `json:"reactions"`
	// Attachments are the uploads linked to the message, in the order they were attached.
	Attachments []Upload     `json:"attachments"`
	ThreadState *ThreadState `json:"thread_state,omitempty"`
}

// Place is the channel or direct conversation of the message.
func (m Message) Place() Place { return Place{ChannelID: m.ChannelID, DMID: m.DirectConversationID} }

// IsRoot reports whether the message starts a thread (it is not a reply).
func (m Message) IsRoot() bool { return m.ParentMessageID == nil }

// ThreadState summarises a root's replies; it is updated in the transaction of each reply.
type ThreadState struct {
	RootMessageID      string     `json:"root_message_id"`
	ReplyCount         int64      `json:"reply_count"`
	LastReplyAt        *time.Time `json:"last_reply_at,omitempty"`
	LastReplyAuthorIDs []string   `json:"last_reply_author_ids"`
}

// messageColumns and messageFrom read a message with its author and thread state; m is the
// message, u the author, ts the thread state.
var messageColumns = `m.id, coalesce(m.route_id, ''), m.workspace_id, coalesce(m.channel_id, ''),
	coalesce(m.dm_id, ''), m.author_id, m.parent_message_id, m.thread_root_id, m.channel_seq, m.thread_seq,
	m.kind, m.body, coalesce(m.quoted_message_id, ''), coalesce(m.nonce, ''), m.created_at, m.edited_at,
	m.deleted_at, coalesce(ts.reply_count, 0), ts.last_reply_at, coalesce(ts.last_reply_author_ids, '{}'), ` + userColumnsOf("u.")

const messageFrom = `messages m JOIN users u ON u.id = m.author_id
	LEFT JOIN thread_states ts ON ts.root_message_id = m.id`

func scanMessage(row pgx.Row) (Message, error) {
	var m Message
	var u User
	var ts ThreadState
	dest := []any{&m.ID, &m.RouteID, &m.WorkspaceID, &m.ChannelID, &m.DirectConversationID, &m.AuthorID,
		&m.ParentMessageID, &m.ThreadRootID, &m.ChannelSeq, &m.ThreadSeq, &m.Kind, &m.Body, &m.QuotedMessageID,
		&m.Nonce, &m.CreatedAt, &m.EditedAt, &m.DeletedAt, &ts.ReplyCount, &ts.LastReplyAt, &ts.LastReplyAuthorIDs}
	if err := row.Scan(append(dest, userDest(&u)...)...); err != nil {
		return Message{}, err
	}
	m.Author = u.Public()
	m.BodyFormat = "markdown"
	m.Reactions = []ReactionSummary{}
	m.Attachments = []Upload{}
	if m.IsRoot() {
		ts.RootMessageID = m.ID
		m.ThreadState = &ts
	}
	return m, nil
}

func (tx *Tx) scanMessages(rows pgx.Rows, err error) ([]Message, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Message{}
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// messageLoad reads one message without any guard; lock is "" or a row lock clause on m such
// as "FOR SHARE OF m". Callers pass the result through placeFor before showing or changing it.
// Codes: not_found.
func (tx *Reader) messageLoad(ctx context.Context, id, lock string) (Message, error) {
	m, err := scanMessage(tx.queryRow(ctx, `SELECT `+messageColumns+` FROM `+messageFrom+` WHERE m.id = $1 `+lock, id))
	return m, notFoundAs(err, "message")
}

// messageFor loads a message and admits the actor to its place for the given access.
// Codes: not_found, those of the guards.
func (tx *Tx) messageFor(ctx context.Context, actor Actor, id string, a placeAccess, lock string) (Message, Member, error) {
	m, err := tx.messageLoad(ctx, id, lock)
	if err != nil {
		return Message{}, Member{}, err
	}
	_, member, err := tx.placeFor(ctx, actor, m.Place(), a)
	return m, member, err
}

// MessageGet returns a message the actor may read, hydrated. Codes: not_found, forbidden.
func (tx *Tx) MessageGet(ctx context.Context, actor Actor, id string) (Message, error) {
	m, _, err := tx.messageFor(ctx, actor, id, accessRead, "")
	if err != nil {
		return Message{}, err
	}
	return tx.messageHydrate(ctx, actor, m)
}

// messageHydrate fills one message's reactions (for the actor) and attachments.
func (tx *Tx) messageHydrate(ctx context.Context, actor Actor, m Message) (Message, error) {
	msgs := []Message{m}
	err := tx.messagesHydrate(ctx, actor.UserID, msgs)
	return msgs[0], err
}

// messageIndex lists the ids of msgs and where each id stands, for the batch hydrations.
func messageIndex(msgs []Message) (ids []string, at map[string]int) {
	ids = make([]string, len(msgs))
	at = make(map[string]int, len(msgs))
	for i, m := range msgs {
		ids[i], at[m.ID] = m.ID, i
	}
	return ids, at
}

// messagesHydrate fills the reactions (for viewer userID) and attachments of msgs, all of one
// workspace: one query each, whatever the number of messages.
func (tx *Tx) messagesHydrate(ctx context.Context, userID string, msgs []Message) error {
	if err := tx.reactionsHydrate(ctx, userID, msgs); err != nil {
		return err
	}
	return tx.attachmentsHydrate(ctx, msgs)
}

// MessageGetByNonce returns the actor's own message created with nonce. Codes: invalid_request,
// not_found (no such message), conflict (the nonce belongs to a message of another workspace),
// forbidden.
func (tx *Tx) MessageGetByNonce(ctx context.Context, actor Actor, workspaceID, nonce string) (Message, error) {
	if workspaceID == "" || nonce == "" {
		return Message{}, Invalid("workspace_id and nonce are required")
	}
	if _, err := tx.requireMemberToRead(ctx, workspaceID, actor); err != nil {
		return Message{}, err
	}
	var id, ws string
	err := tx.queryRow(ctx, `SELECT id, workspace_id FROM messages WHERE author_id = $1 AND nonce = $2`,
		actor.UserID, nonce).Scan(&id, &ws)
	if err != nil {
		return Message{}, notFoundAs(err, "message")
	}
	if ws != workspaceID {
		return Message{}, Conflict("that nonce belongs to a message in another workspace")
	}
	return tx.MessageGet(ctx, actor, id)
}

// MessageCreateParams is a new message: a root (MessageCreate) or a reply (ThreadReplyCreate,
// which ignores UploadID and Kind).
type MessageCreateParams struct {
	Body            string
	QuotedMessageID string
	// Nonce makes the create idempotent per author: the same nonce with the same place, body,
	// quote and kind returns the original message.
	Nonce string
	// UploadID names an upload of the same workspace to attach, in the create's transaction.
	UploadID string
	Kind     string // default MessageKindMessage
}

// MessageCreated is the outcome of a create. Replayed means Message is the original of an
// earlier create with the same nonce, and nothing was written (Event is zero).
type MessageCreated struct {
	Message  Message
	Event    Event
	Replayed bool
}

// EachEvent hands over the create's event (none for a replay).
func (m *MessageCreated) EachEvent(place func(*Event)) {
	if !m.Replayed {
		place(&m.Event)
	}
}

// MessageCreate posts a root message to a channel or direct conversation: the write guard of
// the place (membership, guest channel and budget, timeout, block, archived channel), the next
// channel_seq of the place allocated in this transaction, the upload linked when UploadID is
// set (see uploadForLink), and message.created, carrying the attachment. A failure leaves
// neither message nor link. Codes: invalid_request, not_found (place, quoted message, upload),
// forbidden (guards, agent kinds, guests attaching), missing_scope (a bot token attaching
// without uploads:write), rate_limited (guest budget), conflict (nonce reused for another
// message), message_deleted (quoted message).
func (tx *Tx) MessageCreate(ctx context.Context, actor Actor, p Place, in MessageCreateParams) (MessageCreated, error) {
	post, err := newMessagePost(tx.now, actor, p, in)
	if err != nil {
		return MessageCreated{}, err
	}
	if g := tx.group; g != nil {
		// A group that sent this post's statements with its other posts' (BatchMessageCreate)
		// gave the message its id then.
		if pre, ok := g.planned.(messagePost); ok && pre.sameAs(post) {
			post.id = pre.id
		}
		g.planned = nil
		if tx.mayGoAhead() {
			if path := post.path(tx, g.key); path != nil {
				if err := tx.sendAhead(ctx, path); err != nil {
					return MessageCreated{}, err
				}
			}
		}
	}
	digest := post.digest
	if orig, ok, err := tx.nonceReplay(ctx, actor, in.Nonce, digest); ok || err != nil {
		return MessageCreated{Message: orig, Replayed: true}, err
	}
	st, member, err := tx.placeFor(ctx, actor, p, accessPost)
	if err != nil {
		return MessageCreated{}, err
	}
	var upload Upload
	if in.UploadID != "" {
		if upload, err = tx.uploadForLink(ctx, actor, member, in.UploadID); err != nil {
			return MessageCreated{}, err
		}
	}
	if err := tx.quoteCheck(ctx, actor, st.WorkspaceID, in.QuotedMessageID); err != nil {
		return MessageCreated{}, err
	}
	m, err := tx.messageInsert(ctx, post.counter(), p.ID(), post.row(st.WorkspaceID))
	if err != nil {
		return MessageCreated{}, err
	}
	if upload.ID != "" {
		if _, err := tx.attachmentInsert(ctx, m.WorkspaceID, m.ID, upload.ID, actor.UserID); err != nil {
			return MessageCreated{}, err
		}
		m.Attachments = []Upload{upload}
	}
	ev, err := tx.EventAppend(ctx, m.messageEvent("message.created", actor, nil))
	return MessageCreated{Message: m, Event: ev}, err
}

// messageKind checks a requested kind against the actor. Codes: invalid_request, forbidden.
func messageKind(actor Actor, kind string) (string, error) {
	switch kind {
	case "", MessageKindMessage:
		return MessageKindMessage, nil
	case MessageKindAgentCommentary, MessageKindAgentTool:
		if !actor.IsBotToken() || !actor.HasScope(ScopeAgentActivityWrite) {
			return "", Forbidden("%s messages can be posted only with a bot token holding agent_activity:write", kind)
		}
		return kind, nil
	}
	return "", Invalid("kind must be message, agent_commentary or agent_tool")
}

// validateMessageInput checks a body and a nonce. Codes: invalid_request.
func validateMessageInput(body, nonce string) error {
	if err := validateBody(body); err != nil {
		return err
	}
	if utf8.RuneCountInString(nonce) > MaxNonceLength || strings.ContainsRune(nonce, 0) {
		return Invalid("nonce must be at most %d characters", MaxNonceLength)
	}
	return nil
}

// validateBody checks a message body: not blank, at most MaxBodyLength characters, no NUL.
// Codes: invalid_request.
func validateBody(body string) error {
	if strings.TrimSpace(body) == "" {
		return Invalid("body must not be empty")
	}
	if utf8.RuneCountInString(body) > MaxBodyLength {
		return Invalid("body must be at most %d characters", MaxBodyLength)
	}
	if strings.ContainsRune(body, 0) {
		return Invalid("body must not contain NUL characters")
	}
	return nil
}

// nonceDigest fingerprints what a create with a nonce asked for, so a replay can be told from a
// reuse of the nonce for something else. Edits and deletion do not change it. The upload joins
// the fingerprint only when there is one, so digests of creates without one are unchanged.
func nonceDigest(p Place, parentID, body, quotedID, kind, uploadID string) []byte {
	h := sha256.New()
	parts := []string{"v1", p.ChannelID, p.DMID, parentID, body, quotedID, kind}
	if uploadID != "" {
		parts = append(parts, "upload", uploadID)
	}
	for _, part := range parts {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// nonceReplay looks for the actor's earlier message with nonce. ok reports a replay (the
// original, readable by the actor). A concurrent create with the same nonce is settled by the
// unique index on (author, nonce): the later insert waits for the earlier transaction and, when
// that commits, fails with an error the store retries (see retryable), and the retry finds the
// original here. Codes: conflict (the nonce was used for another message), those of the read
// guards.
// messagePost is what a create decides before its first statement: its kind, its nonce
// fingerprint and the new message's id.
type messagePost struct {
	actor  Actor
	place  Place
	in     MessageCreateParams
	kind   string
	digest []byte
	id     string
}

// newMessagePost checks a create's input and gives its message an id. Codes: invalid_request,
// forbidden (agent kinds).
func newMessagePost(now time.Time, actor Actor, p Place, in MessageCreateParams) (messagePost, error) {
	kind, err := messageKind(actor, in.Kind)
	if err != nil {
		return messagePost{}, err
	}
	if err := validateMessageInput(in.Body, in.Nonce); err != nil {
		return messagePost{}, err
	}
	return messagePost{actor: actor, place: p, in: in, kind: kind,
		digest: nonceDigest(p, "", in.Body, in.QuotedMessageID, kind, in.UploadID), id: NewID(PrefixMessage, now)}, nil
}

// sameAs reports whether two posts are the same create (the id aside).
func (m messagePost) sameAs(o messagePost) bool {
	return m.actor.UserID == o.actor.UserID && m.in.Nonce == o.in.Nonce && bytes.Equal(m.digest, o.digest)
}

// counter is the statement that takes the place's next sequence: the counter row, locked until
// commit, so the sequence is gapless and in commit order within the place.
func (m messagePost) counter() string {
	if m.place.DMID != "" {
		return `UPDATE dms SET last_seq = last_seq + 1, last_activity_at = $15 WHERE id = $1 AND workspace_id = $3 RETURNING last_seq AS seq`
	}
	return `UPDATE channels SET last_seq = last_seq + 1 WHERE id = $1 AND workspace_id = $3 RETURNING last_seq AS seq`
}

func (m messagePost) row(workspaceID string) messageRow {
	return messageRow{id: m.id, routeID: RouteID("M", m.id), workspaceID: workspaceID, place: m.place,
		authorID: m.actor.UserID, threadRootID: m.id, kind: m.kind, body: m.in.Body, quotedID: m.in.QuotedMessageID,
		nonce: m.in.Nonce, digest: m.digest}
}

// path is what the create sends ahead (see sendAhead) in workspace ws when its guards admit it:
// the nonce look-up, the channel or direct conversation, the membership rows, the insert. A post
// that links an upload or quotes a message has none: it runs one statement at a time.
func (m messagePost) path(tx *Tx, ws string) []aheadStatement {
	if m.in.UploadID != "" || m.in.QuotedMessageID != "" {
		return nil
	}
	var ahead []aheadStatement
	if m.in.Nonce != "" {
		ahead = append(ahead, aheadStatement{sql: nonceSelect, args: []any{m.actor.UserID, m.in.Nonce}})
	}
	place := aheadStatement{sql: channelSelect, args: []any{m.place.ChannelID}}
	if m.place.DMID != "" {
		place = aheadStatement{sql: dmSelect, args: []any{m.place.DMID, m.actor.UserID}}
	}
	ahead = append(ahead, place, aheadStatement{sql: memberSelect(memberShare), args: []any{ws, m.actor.UserID}})
	if m.actor.OwnerUserID != "" {
		ahead = append(ahead, aheadStatement{sql: memberSelect(memberShare), args: []any{ws, m.actor.OwnerUserID}})
	}
	sql, args := tx.messageInsertStatement(m.counter(), m.place.ID(), m.row(ws))
	return append(ahead, aheadStatement{sql: sql, args: args, write: true})
}

// BatchMessageCreate is MessageCreate in the group commit of the place's workspace. The group
// sends the statements of its posts together, in one round trip, before any of them runs.
func BatchMessageCreate(ctx context.Context, s *Store, actor Actor, p Place, in MessageCreateParams) (MessageCreated, error) {
	prepare := func(tx *Tx) ([]aheadStatement, any) {
		post, err := newMessagePost(tx.now, actor, p, in)
		if err != nil {
			return nil, nil // refused when it runs
		}
		if path := post.path(tx, tx.group.key); path != nil {
			return path, post
		}
		return nil, nil
	}
	return batch[MessageCreated](ctx, s, s.placeKey(ctx, p), func(tx *Tx) (MessageCreated, error) {
		return tx.MessageCreate(ctx, actor, p, in)
	}, prepare)
}

const nonceSelect = `SELECT id, nonce_digest FROM messages WHERE author_id = $1 AND nonce = $2`

func (tx *Tx) nonceReplay(ctx context.Context, actor Actor, nonce string, digest []byte) (orig Message, ok bool, err error) {
	if nonce == "" {
		return Message{}, false, nil
	}
	var id string
	var stored []byte
	err = tx.queryRow(ctx, nonceSelect, actor.UserID, nonce).Scan(&id, &stored)
	if errors.Is(err, pgx.ErrNoRows) {
		return Message{}, false, nil
	}
	if err != nil {
		return Message{}, false, err
	}
	if !bytes.Equal(stored, digest) {
		return Message{}, false, Conflict("that nonce was already used for a different message")
	}
	m, err := tx.MessageGet(ctx, actor, id)
	return m, err == nil, err
}

// quoteCheck refuses a quote of a message the actor cannot read in the same workspace, or of a
// deleted one. Codes: not_found, message_deleted.
func (tx *Tx) quoteCheck(ctx context.Context, actor Actor, workspaceID, quotedID string) error {
	if quotedID == "" {
		return nil
	}
	q, _, err := tx.messageFor(ctx, actor, quotedID, accessRead, "")
	if e, ok := ErrorOf(err); ok && (e.Code == CodeNotFound || e.Code == CodeForbidden || e.Code == CodeMissingScope) {
		return NotFound("quoted message")
	}
	if err != nil {
		return err
	}
	if q.WorkspaceID != workspaceID {
		return NotFound("quoted message")
	}
	if q.DeletedAt != nil {
		return Errorf(CodeMessageDeleted, "the quoted message was deleted")
	}
	return nil
}

// messageRow is a message about to be inserted.
type messageRow struct {
	id, routeID, workspaceID string
	place                    Place
	authorID                 string
	parentID, threadRootID   string
	kind, body, quotedID     string
	nonce                    string
	digest                   []byte
}

// messageInsert inserts a message and returns it hydrated for a new message (no reactions, an
// empty thread state for roots). counter is a statement returning the sequence as "seq": the
// place's counter update for roots, a literal for replies; its $1 is counterArg and it may use
// the insert's parameters ($3 workspace, $15 now).
func (tx *Tx) messageInsert(ctx context.Context, counter string, counterArg any, r messageRow) (Message, error) {
	sql, args := tx.messageInsertStatement(counter, counterArg, r)
	return scanMessage(tx.queryRow(ctx, sql, args...))
}

// messageInsertStatement is the statement of messageInsert.
func (tx *Tx) messageInsertStatement(counter string, counterArg any, r messageRow) (string, []any) {
	return `WITH counter AS (` + counter + `),
		m AS (
			INSERT INTO messages (id, route_id, workspace_id, channel_id, dm_id, author_id, parent_message_id,
				thread_root_id, channel_seq, thread_seq, kind, body, quoted_message_id, nonce, nonce_digest, created_at)
			SELECT $2, nullif($4, ''), $3, nullif($5, ''), nullif($6, ''), $7, nullif($8, ''), $9,
				CASE WHEN $8 = '' THEN counter.seq END, CASE WHEN $8 <> '' THEN counter.seq END,
				$10, $11, nullif($12, ''), nullif($13, ''), $14, $15
			FROM counter
			RETURNING *)
		SELECT ` + messageColumns + ` FROM m JOIN users u ON u.id = m.author_id
			LEFT JOIN thread_states ts ON ts.root_message_id = m.id`,
		[]any{counterArg, r.id, r.workspaceID, r.routeID, r.place.ChannelID, r.place.DMID, r.authorID, r.parentID,
			r.threadRootID, r.kind, r.body, r.quotedID, r.nonce, nullDigest(r.digest, r.nonce), tx.now}
}

func nullDigest(d []byte, nonce string) []byte {
	if nonce == "" {
		return nil
	}
	return d
}
