package persist

import (
	"context"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// HistoryMessageParams is a message of the source.
type HistoryMessageParams struct {
	SourceID string
	// Place is a channel or direct conversation of the workspace.
	Place Place
	// AuthorID is a Natter user (an imported person, possibly deactivated).
	AuthorID string
	// ParentID, when set, makes the message a reply: a root message of the same place.
	ParentID string
	// Body is the latest text, checked like any message body.
	Body string
	// CreatedAt is required and not in the future; EditedAt, when set, is the last edit.
	CreatedAt time.Time
	EditedAt  *time.Time
}

// HistoryMessage imports a message or a reply, with its original times and no event. A root takes
// its place's next sequence; a reply its thread's next, and updates the thread's state (reply
// count, last reply time and recent authors) as a reply posted then would have. Codes:
// invalid_request (source id, body, times, parent is a reply), not_found (place, author,
// parent).
func (tx *Tx) HistoryMessage(ctx context.Context, h History, p HistoryMessageParams) (Imported, error) {
	if err := historySourceID(HistoryKindMessage, p.SourceID); err != nil {
		return Imported{}, err
	}
	if err := validateBody(p.Body); err != nil {
		return Imported{}, err
	}
	if p.CreatedAt.IsZero() || p.CreatedAt.After(tx.now) {
		return Imported{}, Invalid("created_at must be set and not in the future")
	}
	if p.EditedAt != nil && (p.EditedAt.Before(p.CreatedAt) || p.EditedAt.After(tx.now)) {
		return Imported{}, Invalid("edited_at must be between created_at and now")
	}
	if (p.Place.ChannelID == "") == (p.Place.DMID == "") {
		return Imported{}, Invalid("a message belongs to exactly one channel or direct conversation")
	}
	row := messageRow{id: NewID(PrefixMessage, p.CreatedAt), workspaceID: h.WorkspaceID, place: p.Place,
		authorID: p.AuthorID, kind: MessageKindMessage, body: p.Body}
	if p.ParentID != "" {
		return tx.historyReply(ctx, h, row, p)
	}
	row.routeID, row.threadRootID = RouteID("M", row.id), row.id
	written, err := tx.historyRootInsert(ctx, h, row, p)
	if err != nil || written {
		return Imported{ID: row.id, Created: written}, err
	}
	// Nothing written: the source id was imported before, or the place or the author is not there.
	if id, ok, err := tx.HistoryLookup(ctx, h, HistoryKindMessage, p.SourceID); err != nil || ok {
		return Imported{ID: id}, err
	}
	return Imported{}, tx.historyMessageRefs(ctx, h, p)
}

// historyReply is HistoryMessage for a reply.
func (tx *Tx) historyReply(ctx context.Context, h History, row messageRow, p HistoryMessageParams) (Imported, error) {
	if id, ok, err := tx.HistoryLookup(ctx, h, HistoryKindMessage, p.SourceID); err != nil || ok {
		return Imported{ID: id}, err
	}
	if err := tx.historyMessageRefs(ctx, h, p); err != nil {
		return Imported{}, err
	}
	if err := tx.historyReplyInsert(ctx, row, p); err != nil {
		return Imported{}, err
	}
	return Imported{ID: row.id, Created: true}, tx.historyRecord(ctx, h, HistoryKindMessage, p.SourceID, row.id)
}

// historySourceID checks a source id. Codes: invalid_request.
func historySourceID(kind, sourceID string) error {
	if sourceID == "" || len(sourceID) > 512 || !utf8.ValidString(sourceID) {
		return Invalid("%s source id must be 1 to 512 bytes of text", kind)
	}
	return nil
}

// historyMessageRefs finds a message's place in the workspace and its author. Codes: not_found.
func (tx *Tx) historyMessageRefs(ctx context.Context, h History, p HistoryMessageParams) error {
	table := "channels"
	if p.Place.DMID != "" {
		table = "dms"
	}
	var place, author bool
	if err := tx.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+table+` WHERE workspace_id = $1 AND id = $2),
		EXISTS (SELECT 1 FROM users WHERE id = $3)`, h.WorkspaceID, p.Place.ID(), p.AuthorID).Scan(&place, &author); err != nil {
		return err
	}
	switch {
	case !place:
		return NotFound("place")
	case !author:
		return NotFound("user")
	}
	return nil
}

// historyRootInsert writes a root in one statement when its place and author exist and its
// source id is new: the record, the place's next sequence (the counter row stays locked to
// commit, so live posts and the import share one gapless sequence) and the message. written is
// false when nothing was written.
func (tx *Tx) historyRootInsert(ctx context.Context, h History, r messageRow, p HistoryMessageParams) (written bool, err error) {
	table, activity := "channels", ""
	if p.Place.DMID != "" {
		table, activity = "dms", ", last_activity_at = greatest(last_activity_at, $8)"
	}
	tag, err := tx.exec(ctx, `WITH ok AS (
			SELECT 1 WHERE EXISTS (SELECT 1 FROM `+table+` WHERE workspace_id = $2 AND id = $1)
				AND EXISTS (SELECT 1 FROM users WHERE id = $7)),
		rec AS (
			INSERT INTO import_records (workspace_id, source, kind, source_id, target_id, created_at)
			SELECT $2, $11, 'message', $12, $3, $13 FROM ok
			ON CONFLICT DO NOTHING RETURNING 1),
		counter AS (
			UPDATE `+table+` SET last_seq = last_seq + 1`+activity+`
			WHERE id = $1 AND workspace_id = $2 AND EXISTS (SELECT 1 FROM rec) RETURNING last_seq AS seq)
		INSERT INTO messages (id, route_id, workspace_id, channel_id, dm_id, author_id, thread_root_id, channel_seq,
			kind, body, created_at, edited_at)
		SELECT $3, $4, $2, nullif($5, ''), nullif($6, ''), $7, $3, counter.seq, 'message', $9, $8, $10 FROM counter`,
		p.Place.ID(), r.workspaceID, r.id, r.routeID, p.Place.ChannelID, p.Place.DMID, r.authorID, p.CreatedAt,
		r.body, p.EditedAt, h.Source, p.SourceID, tx.now)
	return tag.RowsAffected() == 1, err
}

// historyReplyInsert inserts a reply with its thread's next sequence and folds it into the
// thread's state: the last reply time is the latest one, and its author leads the recent
// authors only when the reply is the latest.
func (tx *Tx) historyReplyInsert(ctx context.Context, r messageRow, p HistoryMessageParams) error {
	root, err := tx.messageLoad(ctx, p.ParentID, "FOR SHARE OF m")
	if err != nil {
		return err
	}
	if root.Place() != p.Place || root.WorkspaceID != r.workspaceID {
		return NotFound("parent message")
	}
	if !root.IsRoot() {
		return Invalid("replies cannot have replies; reply to the thread root %s", root.ThreadRootID)
	}
	var seq int64
	if err := tx.queryRow(ctx, `INSERT INTO thread_states AS ts (root_message_id, workspace_id, last_thread_seq,
			reply_count, last_reply_at, last_reply_author_ids)
		VALUES ($1, $2, 1, 1, $3, ARRAY[$4::text])
		ON CONFLICT (root_message_id) DO UPDATE SET
			last_thread_seq = ts.last_thread_seq + 1,
			reply_count = ts.reply_count + 1,
			last_reply_at = greatest(ts.last_reply_at, EXCLUDED.last_reply_at),
			last_reply_author_ids = CASE WHEN EXCLUDED.last_reply_at >= ts.last_reply_at
				THEN (array_prepend($4::text, array_remove(ts.last_reply_author_ids, $4::text)))[1:$5]
				WHEN $4::text = ANY(ts.last_reply_author_ids) OR cardinality(ts.last_reply_author_ids) >= $5
				THEN ts.last_reply_author_ids
				ELSE array_append(ts.last_reply_author_ids, $4::text) END
		RETURNING last_thread_seq`,
		root.ID, r.workspaceID, p.CreatedAt, r.authorID, threadRingSize).Scan(&seq); err != nil {
		return err
	}
	if p.Place.DMID != "" {
		if _, err := tx.exec(ctx, `UPDATE dms SET last_activity_at = greatest(last_activity_at, $3)
			WHERE workspace_id = $1 AND id = $2`, r.workspaceID, p.Place.DMID, p.CreatedAt); err != nil {
			return err
		}
	}
	_, err = tx.exec(ctx, `INSERT INTO messages (id, workspace_id, channel_id, dm_id, author_id, parent_message_id,
			thread_root_id, thread_seq, kind, body, created_at, edited_at)
		VALUES ($1, $2, nullif($3, ''), nullif($4, ''), $5, $6, $6, $7, 'message', $8, $9, $10)`,
		r.id, r.workspaceID, p.Place.ChannelID, p.Place.DMID, r.authorID, root.ID, seq, r.body, p.CreatedAt, p.EditedAt)
	if err != nil {
		return err
	}
	// Imported history is read: its threads are followed, with nothing unread.
	return tx.threadFollow(ctx, root, r.authorID, seq, p.CreatedAt, r.body, true)
}

// historyMessage loads what the history writers need of a live message of the workspace (id,
// workspace, place, author, root or reply), its row shared to commit. Codes: not_found,
// message_deleted.
func (tx *Tx) historyMessage(ctx context.Context, h History, messageID string) (Message, error) {
	m := Message{ID: messageID}
	var deleted bool
	err := tx.queryRow(ctx, `SELECT workspace_id, coalesce(channel_id, ''), coalesce(dm_id, ''), author_id,
			parent_message_id, thread_root_id, deleted_at IS NOT NULL
		FROM messages WHERE id = $1 AND workspace_id = $2 FOR SHARE`, messageID, h.WorkspaceID).Scan(
		&m.WorkspaceID, &m.ChannelID, &m.DirectConversationID, &m.AuthorID, &m.ParentMessageID, &m.ThreadRootID, &deleted)
	if err != nil {
		return Message{}, notFoundAs(err, "message")
	}
	if deleted {
		return Message{}, Errorf(CodeMessageDeleted, "that message was deleted")
	}
	return m, nil
}

// HistoryReaction adds userID's emoji reaction to an imported message at time at (zero: now),
// without event; added is false when it was there already. The message's limits hold (see
// ReactionAdd): past them the reaction is refused. Codes: invalid_request (emoji), not_found
// (message, user), message_deleted, too_many_reactions (the transaction is then aborted).
func (tx *Tx) HistoryReaction(ctx context.Context, h History, messageID, emoji, userID string, at time.Time) (added bool, err error) {
	if err := validateEmoji(emoji); err != nil {
		return false, err
	}
	m, err := tx.historyMessage(ctx, h, messageID)
	if err != nil {
		return false, err
	}
	if _, err := tx.UserGet(ctx, userID); err != nil {
		return false, err
	}
	if at.IsZero() || at.After(tx.now) {
		at = tx.now
	}
	tag, err := tx.exec(ctx, `INSERT INTO reactions (message_id, emoji, user_id, workspace_id, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, m.ID, emoji, userID, m.WorkspaceID, at)
	if err != nil || tag.RowsAffected() == 0 {
		return false, err
	}
	if err := tx.reactionLimits(ctx, m, emoji, userID); err != nil {
		return false, err
	}
	_, err = tx.exec(ctx, `INSERT INTO reaction_counts AS rc (message_id, emoji, workspace_id, count, created_at)
		VALUES ($1, $2, $3, 1, $4)
		ON CONFLICT (message_id, emoji) DO UPDATE SET count = rc.count + 1, created_at = least(rc.created_at, EXCLUDED.created_at)`,
		m.ID, emoji, m.WorkspaceID, at)
	return err == nil, err
}

// HistoryPin pins an imported root message of a channel, by byID at time at (zero: now),
// without event; added is false when it was pinned already. Codes: not_found (message, or not
// in a channel), invalid_request (a reply), message_deleted, conflict (the channel holds
// MaxPins; the transaction is then aborted).
func (tx *Tx) HistoryPin(ctx context.Context, h History, messageID, byID string, at time.Time) (added bool, err error) {
	m, err := tx.historyMessage(ctx, h, messageID)
	if err != nil {
		return false, err
	}
	if m.ChannelID == "" {
		return false, NotFound("channel message")
	}
	if !m.IsRoot() {
		return false, Invalid("only a root message can be pinned")
	}
	if at.IsZero() || at.After(tx.now) {
		at = tx.now
	}
	tag, err := tx.exec(ctx, `INSERT INTO pins (channel_id, message_id, workspace_id, pinned_by, pinned_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, m.ChannelID, m.ID, m.WorkspaceID, byID, at)
	if err != nil || tag.RowsAffected() == 0 {
		return false, err
	}
	var count int
	err = tx.queryRow(ctx, `INSERT INTO channel_pin_counts AS pc (channel_id, workspace_id, count) VALUES ($1, $2, 1)
		ON CONFLICT (channel_id) DO UPDATE SET count = pc.count + 1 WHERE pc.count < $3
		RETURNING count`, m.ChannelID, m.WorkspaceID, MaxPins).Scan(&count)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, Conflict("a channel holds at most %d pins", MaxPins)
	}
	return err == nil, err
}

// HistoryUploadParams is a file of the source whose bytes the caller has put in the upload
// store under StorageKey (with a key of its own making: blob.NewKey).
type HistoryUploadParams struct {
	SourceID    string
	OwnerID     string
	StorageKey  string
	Filename    string
	ContentType string // "" stores DefaultContentType
	ByteSize    int64
	SHA256      []byte
	CreatedAt   time.Time // zero means now
}

// HistoryUpload records an imported file. When the source id was imported before, nothing is
// written and the caller deletes its own object (Created false). Look the source id up first
// (HistoryLookup) to avoid storing the bytes twice. Codes: invalid_request, not_found (owner).
func (tx *Tx) HistoryUpload(ctx context.Context, h History, p HistoryUploadParams) (Imported, error) {
	id, ok, err := tx.historyKnown(ctx, h, HistoryKindUpload, p.SourceID)
	if err != nil || ok {
		return Imported{ID: id}, err
	}
	if p.ContentType == "" {
		p.ContentType = DefaultContentType
	}
	if len(p.ContentType) > MaxContentTypeLength || p.StorageKey == "" || p.ByteSize < 0 || len(p.SHA256) != 32 {
		return Imported{}, Invalid("an upload needs a storage key, a size, a SHA-256 and a content type of at most %d bytes", MaxContentTypeLength)
	}
	if _, err := tx.UserGet(ctx, p.OwnerID); err != nil {
		return Imported{}, err
	}
	if p.CreatedAt.IsZero() || p.CreatedAt.After(tx.now) {
		p.CreatedAt = tx.now
	}
	id = NewID(PrefixUpload, p.CreatedAt)
	if _, err := tx.exec(ctx, `INSERT INTO uploads (id, workspace_id, owner_id, storage_key, filename, content_type,
			byte_size, sha256, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		id, h.WorkspaceID, p.OwnerID, p.StorageKey, CleanFilename(p.Filename), p.ContentType, p.ByteSize, p.SHA256,
		p.CreatedAt); err != nil {
		return Imported{}, err
	}
	return Imported{ID: id, Created: true}, tx.historyRecord(ctx, h, HistoryKindUpload, p.SourceID, id)
}

// HistoryAttach attaches an upload of the workspace to an imported message, after its other
// attachments, as its author's; attached is false when it was attached already.
// Codes: not_found (message or upload), message_deleted.
func (tx *Tx) HistoryAttach(ctx context.Context, h History, messageID, uploadID string) (attached bool, err error) {
	m, err := tx.historyMessage(ctx, h, messageID)
	if err != nil {
		return false, err
	}
	var one int
	if err := tx.queryRow(ctx, `SELECT 1 FROM uploads WHERE workspace_id = $1 AND id = $2`, h.WorkspaceID, uploadID).Scan(&one); err != nil {
		return false, notFoundAs(err, "upload")
	}
	return tx.attachmentInsert(ctx, h.WorkspaceID, m.ID, uploadID, m.AuthorID)
}
