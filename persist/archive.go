package persist

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/jackc/pgx/v5"
)

// The reads of a workspace export (server/archive writes them into the archive whose format
// docs/operations.md documents). Every list is one keyset page, so an export holds a page at a
// time whatever the workspace's size; run them inside Store.Snapshot so the pages agree. The
// record types are the archive's lines: their JSON is the format.

// ArchiveScope says what an export holds. An operator's export (ViewerID empty) holds the whole
// workspace; a person's (the owner's download) holds what that person may read through the API:
// public channels, the private channels they are in and their own direct conversations.
type ArchiveScope struct {
	WorkspaceID string
	// ViewerID is the person exporting; empty for the operator.
	ViewerID string
}

// ArchiveUser is a person or bot an export names (a member, an author, a reactor…). Email is in
// an operator's export only; AvatarURL is the explicit avatar there and the avatar as everyone
// sees it (email-derived fallback included) in a person's.
type ArchiveUser struct {
	ID           string     `json:"id"`
	Kind         string     `json:"kind"`
	OwnerUserID  string     `json:"owner_user_id,omitempty"`
	DisplayName  string     `json:"display_name"`
	Handle       string     `json:"handle,omitempty"`
	FormerHandle string     `json:"former_handle,omitempty"`
	Email        string     `json:"email,omitempty"`
	AvatarURL    string     `json:"avatar_url,omitempty"`
	TimeZone     string     `json:"time_zone,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	DeletedAt    *time.Time `json:"deleted_at,omitempty"`
}

// ArchiveChannelMember is a person or bot in a private channel.
type ArchiveChannelMember struct {
	ChannelID string    `json:"channel_id"`
	UserID    string    `json:"user_id"`
	AddedBy   string    `json:"added_by,omitempty"`
	AddedAt   time.Time `json:"added_at"`
}

// ArchiveDM is a direct conversation with its members.
type ArchiveDM struct {
	ID             string            `json:"id"`
	RouteID        string            `json:"route_id"`
	CreatedBy      string            `json:"created_by,omitempty"`
	CreatedAt      time.Time         `json:"created_at"`
	LastActivityAt time.Time         `json:"last_activity_at"`
	LastSeq        int64             `json:"last_seq"`
	Members        []ArchiveDMMember `json:"members"`
}

// ArchiveDMMember is one member of a direct conversation; HiddenAt is set while they hide it.
type ArchiveDMMember struct {
	UserID   string     `json:"user_id"`
	HiddenAt *time.Time `json:"hidden_at,omitempty"`
}

// ArchiveMessage is a root or a reply with its reactions (who, which emoji, when) and
// attachments; a root carries its thread's state. A tombstone keeps its sequence, deleted_at and
// an empty body.
type ArchiveMessage struct {
	ID                   string              `json:"id"`
	RouteID              string              `json:"route_id,omitempty"`
	ChannelID            string              `json:"channel_id,omitempty"`
	DirectConversationID string              `json:"direct_conversation_id,omitempty"`
	AuthorID             string              `json:"author_id"`
	ParentMessageID      string              `json:"parent_message_id,omitempty"`
	ChannelSeq           *int64              `json:"channel_seq,omitempty"`
	ThreadSeq            *int64              `json:"thread_seq,omitempty"`
	Kind                 string              `json:"kind"`
	Body                 string              `json:"body"`
	QuotedMessageID      string              `json:"quoted_message_id,omitempty"`
	Nonce                string              `json:"nonce,omitempty"`
	CreatedAt            time.Time           `json:"created_at"`
	EditedAt             *time.Time          `json:"edited_at,omitempty"`
	DeletedAt            *time.Time          `json:"deleted_at,omitempty"`
	Thread               *ArchiveThread      `json:"thread,omitempty"`
	Reactions            []ArchiveReaction   `json:"reactions,omitempty"`
	Attachments          []ArchiveAttachment `json:"attachments,omitempty"`
}

// ArchiveThread is a root's thread state.
type ArchiveThread struct {
	LastThreadSeq      int64     `json:"last_thread_seq"`
	ReplyCount         int64     `json:"reply_count"`
	LastReplyAt        time.Time `json:"last_reply_at"`
	LastReplyAuthorIDs []string  `json:"last_reply_author_ids"`
}

// ArchiveReaction is one person's reaction.
type ArchiveReaction struct {
	Emoji     string    `json:"emoji"`
	UserID    string    `json:"user_id"`
	CreatedAt time.Time `json:"created_at"`
}

// ArchiveAttachment links an upload to a message.
type ArchiveAttachment struct {
	UploadID   string    `json:"upload_id"`
	AttachedBy string    `json:"attached_by"`
	CreatedAt  time.Time `json:"created_at"`
}

// ArchiveReceipt is how far a person has read a channel or conversation (ScopeID).
type ArchiveReceipt struct {
	ScopeID     string    `json:"scope_id"`
	UserID      string    `json:"user_id"`
	LastReadSeq int64     `json:"last_read_seq"`
	LastReadAt  time.Time `json:"last_read_at"`
}

// ArchiveThreadRead is how far a person has read a thread (RootID), and whether they follow it
// (migration 0026: a position without following is kept for a thread one opened).
type ArchiveThreadRead struct {
	RootID      string     `json:"root_message_id"`
	UserID      string     `json:"user_id"`
	Following   bool       `json:"following"`
	LastReadSeq int64      `json:"last_read_seq"`
	LastReadAt  *time.Time `json:"last_read_at,omitempty"`
}

// ArchiveThreadReads returns the page of the thread read positions of a channel or conversation
// after the (root, user) pair, by root then user: for the operator everyone's, for a person their
// own.
func (tx *Reader) ArchiveThreadReads(ctx context.Context, s ArchiveScope, p Place, afterRoot, afterUser string, limit int) ([]ArchiveThreadRead, error) {
	column := "channel_id"
	if p.DMID != "" {
		column = "dm_id"
	}
	rows, err := tx.query(ctx, `SELECT f.root_message_id, f.user_id, f.following, f.last_read_seq, f.last_read_at
		FROM messages r JOIN thread_follows f ON f.root_message_id = r.id
		WHERE r.workspace_id = $1 AND r.`+column+` = $3 AND r.channel_seq IS NOT NULL
			AND ($2 = '' OR f.user_id = $2) AND (f.root_message_id, f.user_id) > ($4, $5)
		ORDER BY f.root_message_id, f.user_id LIMIT $6`, s.WorkspaceID, s.ViewerID, p.ID(), afterRoot, afterUser, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[ArchiveThreadRead])
}

// ArchiveUpload is an upload's metadata; its bytes are the archive entry uploads/<id>.
type ArchiveUpload struct {
	ID          string    `json:"id"`
	OwnerID     string    `json:"owner_id"`
	Nonce       string    `json:"nonce,omitempty"`
	Filename    string    `json:"filename"`
	ContentType string    `json:"content_type"`
	ByteSize    int64     `json:"byte_size"`
	SHA256      string    `json:"sha256"`
	Width       *int      `json:"width,omitempty"`
	Height      *int      `json:"height,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	StorageKey  string    `json:"-"`
}

// ArchiveBot is a bot created in the workspace, with its command menu there; never its tokens.
type ArchiveBot struct {
	UserID    string              `json:"user_id"`
	CreatedBy string              `json:"created_by"`
	CreatedAt time.Time           `json:"created_at"`
	Commands  []ArchiveBotCommand `json:"commands,omitempty"`
}

// ArchiveBotCommand is one entry of a bot's command menu.
type ArchiveBotCommand struct {
	ID          string    `json:"id"`
	Command     string    `json:"command"`
	Description string    `json:"description"`
	ArgsHint    string    `json:"args_hint,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// ArchiveAuthorize is the guard of a person's export: the workspace's owner only. Codes:
// not_found (no such workspace), forbidden (not a member, or not the owner).
func (tx *Reader) ArchiveAuthorize(ctx context.Context, actor Actor, workspaceID string) error {
	m, err := tx.requireMemberToRead(ctx, workspaceID, actor)
	if err != nil {
		return err
	}
	if m.Role != RoleOwner || actor.IsBotToken() {
		return Forbidden("workspace owner permission required")
	}
	return nil
}

// ArchiveWorkspace returns the workspace. Codes: not_found.
func (tx *Reader) ArchiveWorkspace(ctx context.Context, id string) (Workspace, error) {
	w, err := scanWorkspace(tx.queryRow(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE id = $1`, id))
	return w, notFoundAs(err, "workspace")
}

// ArchiveMembers returns the page of members after join sequence afterSeq, in join order, and
// the last sequence of the page.
func (tx *Reader) ArchiveMembers(ctx context.Context, workspaceID string, afterSeq int64, limit int) ([]Member, int64, error) {
	rows, err := tx.query(ctx, `SELECT `+memberColumns+`, join_seq FROM workspace_members
		WHERE workspace_id = $1 AND join_seq > $2 ORDER BY join_seq LIMIT $3`, workspaceID, afterSeq, limit)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []Member{}
	last := afterSeq
	for rows.Next() {
		var m Member
		if err := rows.Scan(append(memberDest(&m), &last)...); err != nil {
			return nil, 0, err
		}
		out = append(out, m)
	}
	return out, last, rows.Err()
}

// visibleChannel is the condition on channel c of what scope $2 (the viewer, empty for the
// operator) may read.
const visibleChannel = `($2 = '' OR c.visibility = 'public' OR EXISTS (
	SELECT 1 FROM channel_members cm WHERE cm.channel_id = c.id AND cm.user_id = $2))`

// visibleDM is the same for direct conversation d.
const visibleDM = `($2 = '' OR EXISTS (SELECT 1 FROM dm_members v WHERE v.dm_id = d.id AND v.user_id = $2))`

// ArchiveChannels returns the page of channels in scope after id afterID, by id.
func (tx *Reader) ArchiveChannels(ctx context.Context, s ArchiveScope, afterID string, limit int) ([]Channel, error) {
	rows, err := tx.query(ctx, `SELECT `+channelColumns+` FROM channels c
		WHERE c.workspace_id = $1 AND `+visibleChannel+` AND c.id > $3 ORDER BY c.id LIMIT $4`,
		s.WorkspaceID, s.ViewerID, afterID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Channel, error) { return scanChannel(r) })
}

// ArchiveChannelMembers returns the page of a private channel's members after user afterUserID.
func (tx *Reader) ArchiveChannelMembers(ctx context.Context, channelID, afterUserID string, limit int) ([]ArchiveChannelMember, error) {
	rows, err := tx.query(ctx, `SELECT channel_id, user_id, coalesce(added_by, ''), added_at FROM channel_members
		WHERE channel_id = $1 AND user_id > $2 ORDER BY user_id LIMIT $3`, channelID, afterUserID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[ArchiveChannelMember])
}

// ArchiveDMs returns the page of direct conversations in scope after id afterID, by id, each
// with its members.
func (tx *Reader) ArchiveDMs(ctx context.Context, s ArchiveScope, afterID string, limit int) ([]ArchiveDM, error) {
	rows, err := tx.query(ctx, `SELECT d.id, d.route_id, coalesce(d.created_by, ''), d.created_at,
		d.last_activity_at, d.last_seq,
		(SELECT coalesce(json_agg(json_build_object('user_id', m.user_id, 'hidden_at', m.hidden_at) ORDER BY m.user_id), '[]')
		   FROM dm_members m WHERE m.dm_id = d.id)
		FROM dms d WHERE d.workspace_id = $1 AND `+visibleDM+` AND d.id > $3 ORDER BY d.id LIMIT $4`,
		s.WorkspaceID, s.ViewerID, afterID, limit)
	if err != nil {
		return nil, err
	}
	dms, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ArchiveDM])
	for _, d := range dms {
		for i := range d.Members {
			if h := d.Members[i].HiddenAt; h != nil {
				*h = h.UTC() // json_build_object wrote it with an offset
			}
		}
	}
	return dms, err
}

// archiveMessageColumns reads an ArchiveMessage but its reactions and attachments (m the message,
// ts its thread state).
const archiveMessageColumns = `m.id, coalesce(m.route_id, ''), coalesce(m.channel_id, ''), coalesce(m.dm_id, ''),
	m.author_id, coalesce(m.parent_message_id, ''), m.channel_seq, m.thread_seq, m.kind, m.body,
	coalesce(m.quoted_message_id, ''), coalesce(m.nonce, ''), m.created_at, m.edited_at, m.deleted_at,
	ts.last_thread_seq, ts.reply_count, ts.last_reply_at, ts.last_reply_author_ids`

func scanArchiveMessage(row pgx.CollectableRow) (ArchiveMessage, error) {
	var m ArchiveMessage
	var last, count *int64
	var lastAt *time.Time
	var authors []string
	err := row.Scan(&m.ID, &m.RouteID, &m.ChannelID, &m.DirectConversationID, &m.AuthorID, &m.ParentMessageID,
		&m.ChannelSeq, &m.ThreadSeq, &m.Kind, &m.Body, &m.QuotedMessageID, &m.Nonce, &m.CreatedAt, &m.EditedAt,
		&m.DeletedAt, &last, &count, &lastAt, &authors)
	if last != nil {
		m.Thread = &ArchiveThread{LastThreadSeq: *last, ReplyCount: *count, LastReplyAt: *lastAt, LastReplyAuthorIDs: authors}
	}
	return m, err
}

// ArchiveRoots returns the page of root messages of a channel or conversation after sequence
// afterSeq, in sequence order, with their reactions and attachments.
func (tx *Reader) ArchiveRoots(ctx context.Context, p Place, afterSeq int64, limit int) ([]ArchiveMessage, error) {
	col, id := "channel_id", p.ChannelID
	if p.DMID != "" {
		col, id = "dm_id", p.DMID
	}
	rows, err := tx.query(ctx, `SELECT `+archiveMessageColumns+` FROM messages m
		LEFT JOIN thread_states ts ON ts.root_message_id = m.id
		WHERE m.`+col+` = $1 AND m.channel_seq > $2 ORDER BY m.channel_seq LIMIT $3`, id, afterSeq, limit)
	return tx.archiveHydrate(ctx, rows, err)
}

// ArchiveReplies returns the page of replies to the roots rootIDs after (afterRootID, afterSeq),
// by root id then thread sequence, with their reactions and attachments.
func (tx *Reader) ArchiveReplies(ctx context.Context, rootIDs []string, afterRootID string, afterSeq int64, limit int) ([]ArchiveMessage, error) {
	rows, err := tx.query(ctx, `SELECT `+archiveMessageColumns+` FROM messages m
		LEFT JOIN thread_states ts ON false
		WHERE m.thread_root_id = ANY($1) AND m.thread_seq IS NOT NULL AND (m.thread_root_id, m.thread_seq) > ($2, $3)
		ORDER BY m.thread_root_id, m.thread_seq LIMIT $4`, rootIDs, afterRootID, afterSeq, limit)
	return tx.archiveHydrate(ctx, rows, err)
}

// archiveHydrate collects a page of messages and adds their reactions and attachments, each
// read with one statement for the page.
func (tx *Reader) archiveHydrate(ctx context.Context, rows pgx.Rows, err error) ([]ArchiveMessage, error) {
	if err != nil {
		return nil, err
	}
	msgs, err := pgx.CollectRows(rows, scanArchiveMessage)
	if err != nil || len(msgs) == 0 {
		return msgs, err
	}
	ids := make([]string, len(msgs))
	at := make(map[string]int, len(msgs))
	for i, m := range msgs {
		ids[i], at[m.ID] = m.ID, i
	}
	rows, err = tx.query(ctx, `SELECT message_id, emoji, user_id, created_at FROM reactions
		WHERE message_id = ANY($1) ORDER BY message_id, created_at, emoji, user_id`, ids)
	if err != nil {
		return nil, err
	}
	var mid string
	var r ArchiveReaction
	if _, err := pgx.ForEachRow(rows, []any{&mid, &r.Emoji, &r.UserID, &r.CreatedAt}, func() error {
		msgs[at[mid]].Reactions = append(msgs[at[mid]].Reactions, r)
		return nil
	}); err != nil {
		return nil, err
	}
	rows, err = tx.query(ctx, `SELECT message_id, upload_id, attached_by, created_at FROM message_attachments
		WHERE message_id = ANY($1) ORDER BY message_id, created_at, upload_id`, ids)
	if err != nil {
		return nil, err
	}
	var a ArchiveAttachment
	_, err = pgx.ForEachRow(rows, []any{&mid, &a.UploadID, &a.AttachedBy, &a.CreatedAt}, func() error {
		msgs[at[mid]].Attachments = append(msgs[at[mid]].Attachments, a)
		return nil
	})
	return msgs, err
}

// ArchivePins returns a channel's pins (at most MaxPins), oldest first.
func (tx *Reader) ArchivePins(ctx context.Context, channelID string) ([]Pin, error) {
	rows, err := tx.query(ctx, `SELECT workspace_id, channel_id, message_id, pinned_by, pinned_at FROM pins
		WHERE channel_id = $1 ORDER BY pinned_at, message_id`, channelID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Pin, error) {
		var p Pin
		return p, r.Scan(&p.WorkspaceID, &p.ChannelID, &p.MessageID, &p.PinnedBy, &p.PinnedAt)
	})
}

// ArchiveReceipts returns the page of read receipts of a channel or conversation after user
// afterUserID.
func (tx *Reader) ArchiveReceipts(ctx context.Context, scopeID, afterUserID string, limit int) ([]ArchiveReceipt, error) {
	rows, err := tx.query(ctx, `SELECT scope_id, user_id, last_read_seq, last_read_at FROM read_receipts
		WHERE scope_id = $1 AND user_id > $2 ORDER BY user_id LIMIT $3`, scopeID, afterUserID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[ArchiveReceipt])
}

// ArchiveUploads returns the page of uploads in scope after id afterID, by id: for the operator
// every upload of the workspace; for a person the workspace's icon and the files attached to
// messages they may read.
func (tx *Reader) ArchiveUploads(ctx context.Context, s ArchiveScope, afterID string, limit int) ([]ArchiveUpload, error) {
	rows, err := tx.query(ctx, `SELECT u.id, u.owner_id, coalesce(u.nonce, ''), u.filename, u.content_type,
		u.byte_size, u.sha256, u.width, u.height, u.created_at, u.storage_key
		FROM uploads u WHERE u.workspace_id = $1 AND u.id > $3 AND ($2 = ''
		  OR u.id = (SELECT icon_upload_id FROM workspaces WHERE id = $1)
		  OR EXISTS (SELECT 1 FROM message_attachments a JOIN messages m ON m.id = a.message_id
		     LEFT JOIN channels c ON c.id = m.channel_id LEFT JOIN dms d ON d.id = m.dm_id
		     WHERE a.upload_id = u.id AND (c.id IS NOT NULL AND `+visibleChannel+` OR d.id IS NOT NULL AND `+visibleDM+`)))
		ORDER BY u.id LIMIT $4`, s.WorkspaceID, s.ViewerID, afterID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ArchiveUpload, error) {
		var u ArchiveUpload
		var sum []byte
		err := r.Scan(&u.ID, &u.OwnerID, &u.Nonce, &u.Filename, &u.ContentType, &u.ByteSize, &sum, &u.Width,
			&u.Height, &u.CreatedAt, &u.StorageKey)
		u.SHA256 = hex.EncodeToString(sum)
		return u, err
	})
}

// ArchiveBots returns the page of bots created in the workspace after user afterID, each with
// its command menu there.
func (tx *Reader) ArchiveBots(ctx context.Context, workspaceID, afterID string, limit int) ([]ArchiveBot, error) {
	rows, err := tx.query(ctx, `SELECT b.user_id, b.created_by, b.created_at,
		(SELECT coalesce(json_agg(json_build_object('id', c.id, 'command', c.command, 'description', c.description,
		   'args_hint', coalesce(c.args_hint, ''), 'created_at', c.created_at, 'updated_at', c.updated_at)
		   ORDER BY c.command), '[]')
		 FROM bot_commands c WHERE c.workspace_id = b.workspace_id AND c.bot_user_id = b.user_id)
		FROM bots b WHERE b.workspace_id = $1 AND b.user_id > $2 ORDER BY b.user_id LIMIT $3`,
		workspaceID, afterID, limit)
	if err != nil {
		return nil, err
	}
	bots, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ArchiveBot])
	for _, b := range bots {
		for i := range b.Commands {
			c := &b.Commands[i]
			c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC() // written with an offset
		}
	}
	return bots, err
}

// ArchiveUsers returns the users of ids (at most a page), by id, in the form scope s shows
// them (see ArchiveUser).
func (tx *Reader) ArchiveUsers(ctx context.Context, s ArchiveScope, ids []string) ([]ArchiveUser, error) {
	rows, err := tx.query(ctx, `SELECT `+userColumns+` FROM users WHERE id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ArchiveUser, error) {
		var u User
		if err := r.Scan(userDest(&u)...); err != nil {
			return ArchiveUser{}, err
		}
		a := ArchiveUser{ID: u.ID, Kind: u.Kind, OwnerUserID: u.OwnerUserID, DisplayName: u.DisplayName,
			Handle: u.Handle, FormerHandle: u.FormerHandle, Email: u.Email, AvatarURL: u.AvatarURL,
			TimeZone: u.TimeZone, CreatedAt: u.CreatedAt, DeletedAt: u.DeletedAt}
		if s.ViewerID != "" {
			a.Email, a.AvatarURL = "", u.Avatar()
		}
		return a, nil
	})
}
