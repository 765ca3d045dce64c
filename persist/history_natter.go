package persist

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// What an import from another Natter keeps beyond the history writer (history.go,
// history_place.go, history_message.go), so that a workspace exported and imported reads as it
// did: the workspace itself with its owner, users as they were (their dates, a user bot's owner,
// a former member who is no deleted identity), members' roles, join times and standing, the
// fields of channels, conversations and messages the writer does not take (kinds, quotes,
// tombstones, thread states, hidden conversations), read receipts, bots and their command menus.
// Every function here writes only rows of h's workspace that the import itself wrote, and no
// event, as the history writer does.

// Record kinds of a Natter import beyond the history writer's (import_records.kind).
const (
	// HistoryKindWorkspace records the workspace an import created.
	HistoryKindWorkspace = "workspace"
	// HistoryKindBotCommand records a bot's command menu entry.
	HistoryKindBotCommand = "bot_command"
)

// HistoryWorkspaceParams is the workspace of a Natter export and its owner.
type HistoryWorkspaceParams struct {
	SourceID   string // the exported workspace's id
	Name, Slug string
	CreatedAt  time.Time // zero means now
	// Owner is matched by email to a live account, or created.
	Owner HistoryPersonParams
}

// HistoryWorkspaceCreate creates the workspace of an import, owned by Owner (matched by email or
// created), and opens its History under source; the owner is recorded under Owner.SourceID.
// Codes: invalid_request (source, name, slug, owner), conflict (slug taken).
func (tx *Tx) HistoryWorkspaceCreate(ctx context.Context, source string, p HistoryWorkspaceParams) (History, Imported, error) {
	name, err := NormalizeDisplayName(p.Owner.DisplayName)
	if err != nil {
		return History{}, Imported{}, err
	}
	email := NormalizeEmail(p.Owner.Email)
	owner := Imported{}
	if validEmail(email) {
		if u, err := tx.UserGetByEmail(ctx, email); err == nil {
			owner = Imported{ID: u.ID, Matched: true}
		} else if e, ok := ErrorOf(err); !ok || e.Code != CodeNotFound {
			return History{}, Imported{}, err
		}
	} else {
		email = ""
	}
	if owner.ID == "" {
		p.Owner.Kind, p.Owner.Deactivated = KindHuman, false
		if owner.ID, err = tx.historyUserInsert(ctx, p.Owner, name, email); err != nil {
			return History{}, Imported{}, err
		}
		owner.Created = true
	}
	w, err := tx.WorkspaceCreate(ctx, owner.ID, p.Name, p.Slug)
	if err != nil {
		return History{}, Imported{}, err
	}
	if !p.CreatedAt.IsZero() && p.CreatedAt.Before(tx.now) {
		if _, err := tx.exec(ctx, `UPDATE workspaces SET created_at = $2 WHERE id = $1`, w.ID, p.CreatedAt); err != nil {
			return History{}, Imported{}, err
		}
	}
	h, err := tx.HistoryOpen(ctx, w.ID, source)
	if err != nil {
		return History{}, Imported{}, err
	}
	if err := tx.historyRecord(ctx, h, HistoryKindWorkspace, p.SourceID, w.ID); err != nil {
		return History{}, Imported{}, err
	}
	return h, owner, tx.historyRecord(ctx, h, HistoryKindPerson, p.Owner.SourceID, owner.ID)
}

// HistoryWorkspaceDetails gives the workspace of an import its icon (an upload of the import;
// "" for none) and the source's last update. Codes: not_found (upload).
func (tx *Tx) HistoryWorkspaceDetails(ctx context.Context, h History, iconUploadID string, updatedAt time.Time) error {
	tag, err := tx.exec(ctx, `UPDATE workspaces SET icon_upload_id = coalesce(nullif($2, ''), icon_upload_id),
			updated_at = coalesce($3, updated_at)
		WHERE id = $1 AND ($2 = '' OR EXISTS (SELECT 1 FROM uploads WHERE workspace_id = $1 AND id = $2))`,
		h.WorkspaceID, iconUploadID, nullTime(updatedAt))
	if err == nil && tag.RowsAffected() == 0 {
		err = NotFound("upload")
	}
	return err
}

// HistoryUserDetails are a user's fields as the source had them.
type HistoryUserDetails struct {
	OwnerUserID  string // a user bot's owner, a Natter user
	Handle       string // kept when no other user holds it
	FormerHandle string
	Email        string // kept when valid and no other user holds it
	TimeZone     string // an IANA zone name; kept when valid
	CreatedAt    time.Time
	DeletedAt    *time.Time // nil: a live account (a former member stays one)
}

// HistoryUserDetails gives a user the import created (HistoryPerson's Created, in the same
// transaction) the source's fields: its dates, handle, address and a user bot's owner. A user
// the import matched to an existing account must not be passed. Codes: not_found.
func (tx *Tx) HistoryUserDetails(ctx context.Context, h History, userID string, d HistoryUserDetails) error {
	email := NormalizeEmail(d.Email)
	if !validEmail(email) {
		email = ""
	}
	handle, err := NormalizeHandle(d.Handle)
	if err != nil {
		handle = ""
	}
	zone, err := NormalizeTimeZone(d.TimeZone)
	if err != nil {
		zone = ""
	}
	tag, err := tx.exec(ctx, `UPDATE users u SET
			created_at = least(coalesce($3, u.created_at), u.created_at),
			deleted_at = $4,
			handle = CASE WHEN $4::timestamptz IS NULL AND $5 <> ''
				AND NOT EXISTS (SELECT 1 FROM users o WHERE o.handle = $5 AND o.id <> u.id) THEN $5 ELSE u.handle END,
			former_handle = nullif($6, ''),
			email = CASE WHEN $7 <> '' AND NOT EXISTS (SELECT 1 FROM users o WHERE o.email = $7 AND o.id <> u.id)
				THEN $7 ELSE u.email END,
			owner_user_id = CASE WHEN u.kind = 'bot' THEN nullif($8, '') ELSE NULL END,
			time_zone = nullif($9, '')
		WHERE u.id = $2 AND EXISTS (SELECT 1 FROM import_records r WHERE r.workspace_id = $1 AND r.kind = 'person'
			AND r.target_id = u.id)`,
		h.WorkspaceID, userID, nullTime(d.CreatedAt), d.DeletedAt, handle, d.FormerHandle, email, d.OwnerUserID, zone)
	if err == nil && tag.RowsAffected() == 0 {
		err = NotFound("imported user")
	}
	return err
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// HistoryMemberParams is a membership as the source had it.
type HistoryMemberParams struct {
	UserID         string // a Natter user
	Role           string // moderator, member, guest or bot (the owner came with the workspace)
	JoinedAt       time.Time
	TimeoutUntil   *time.Time
	BlockedAt      *time.Time
	ModerationNote string
	ModerationBy   string // a Natter user, or ""
	ModerationAt   *time.Time
}

// HistoryMember makes a user a member of the workspace with the source's role, join time and
// standing; a member already there keeps their role (the owner stays owner) and takes the join
// time and standing. Members are listed in the order this is called. Codes: invalid_request
// (role), not_found (no live user).
func (tx *Tx) HistoryMember(ctx context.Context, h History, p HistoryMemberParams) error {
	switch p.Role {
	case RoleModerator, RoleMember, RoleGuest, RoleBot, RoleOwner:
	default:
		return Invalid("role must be owner, moderator, member, guest or bot")
	}
	if p.Role == RoleOwner {
		p.Role = RoleMember // only a workspace's creation makes its owner
	}
	if _, err := tx.MemberAdd(ctx, h.WorkspaceID, p.UserID, p.Role); err != nil {
		return err
	}
	joined := p.JoinedAt
	if joined.IsZero() || joined.After(tx.now) {
		joined = tx.now
	}
	tag, err := tx.exec(ctx, `UPDATE workspace_members SET joined_at = $3, timeout_until = $4, blocked_at = $5,
			moderation_note = nullif($6, ''), moderation_by = nullif($7, ''), moderation_at = $8
		WHERE workspace_id = $1 AND user_id = $2`,
		h.WorkspaceID, p.UserID, joined, p.TimeoutUntil, p.BlockedAt, p.ModerationNote, p.ModerationBy, p.ModerationAt)
	if err == nil && tag.RowsAffected() == 0 {
		err = NotFound("member")
	}
	return err
}

// HistoryChannelDetails are a channel's fields HistoryChannel does not take.
type HistoryChannelDetails struct {
	Kind            string
	ExternalManaged bool
	ExternalRef     string
	ExternalURL     string
	SidebarSection  string
	ArchivedAt      *time.Time
	UpdatedAt       time.Time
}

// HistoryChannelDetails gives an imported channel the source's kind, external fields, sidebar
// section and times. Codes: not_found.
func (tx *Tx) HistoryChannelDetails(ctx context.Context, h History, channelID string, d HistoryChannelDetails) error {
	if d.Kind == "" {
		d.Kind = DefaultChannelKind
	}
	tag, err := tx.exec(ctx, `UPDATE channels SET kind = $3, external_managed = $4, external_ref = nullif($5, ''),
			external_url = nullif($6, ''), sidebar_section = nullif($7, ''), archived_at = $8,
			updated_at = coalesce($9, updated_at)
		WHERE workspace_id = $1 AND id = $2`,
		h.WorkspaceID, channelID, d.Kind, d.ExternalManaged, d.ExternalRef, d.ExternalURL, d.SidebarSection,
		d.ArchivedAt, nullTime(d.UpdatedAt))
	if err == nil && tag.RowsAffected() == 0 {
		err = NotFound("channel")
	}
	return err
}

// HistoryChannelMemberDetails gives a private channel's imported member who added them and when.
func (tx *Tx) HistoryChannelMemberDetails(ctx context.Context, h History, channelID, userID, addedBy string, at time.Time) error {
	_, err := tx.exec(ctx, `UPDATE channel_members SET added_by = nullif($4, ''), added_at = $5
		WHERE workspace_id = $1 AND channel_id = $2 AND user_id = $3`, h.WorkspaceID, channelID, userID, addedBy, at)
	return err
}

// HistoryConversationDetails gives an imported conversation its creator, last activity and
// the members who hide it (user id → when). Codes: not_found.
func (tx *Tx) HistoryConversationDetails(ctx context.Context, h History, dmID, createdBy string, lastActivity time.Time, hidden map[string]time.Time) error {
	tag, err := tx.exec(ctx, `UPDATE dms SET created_by = coalesce(nullif($3, ''), created_by),
			last_activity_at = coalesce($4, last_activity_at)
		WHERE workspace_id = $1 AND id = $2`, h.WorkspaceID, dmID, createdBy, nullTime(lastActivity))
	if err == nil && tag.RowsAffected() == 0 {
		return NotFound("conversation")
	}
	for user, at := range hidden {
		if err == nil {
			_, err = tx.exec(ctx, `UPDATE dm_members SET hidden_at = $4 WHERE workspace_id = $1 AND dm_id = $2 AND user_id = $3`,
				h.WorkspaceID, dmID, user, at)
		}
	}
	return err
}

// HistoryMessageDetails are a message's fields HistoryMessage does not take.
type HistoryMessageDetails struct {
	Kind            string // message (""), agent_commentary or agent_tool
	QuotedMessageID string // a Natter message of the workspace, or ""
	Nonce           string // the author's idempotency key at the source
	// DeletedAt makes the message a tombstone: body emptied, reactions, attachments and pins
	// gone, sequences kept, as a deletion leaves it.
	DeletedAt *time.Time
	// Thread, for a root, is its thread state at the source (reply authors as Natter users),
	// which counts deleted replies out as the source did.
	Thread *ThreadState
	// LastThreadSeq is the root's last reply sequence, with Thread.
	LastThreadSeq int64
}

// HistoryMessageDetails gives an imported message the source's kind, quote, nonce, deletion and
// thread state. A nonce another message of the author holds is left out. Codes: invalid_request
// (kind), not_found.
func (tx *Tx) HistoryMessageDetails(ctx context.Context, h History, messageID string, d HistoryMessageDetails) error {
	if d.Kind == "" {
		d.Kind = MessageKindMessage
	}
	if d.Kind != MessageKindMessage && d.Kind != MessageKindAgentCommentary && d.Kind != MessageKindAgentTool {
		return Invalid("kind must be message, agent_commentary or agent_tool")
	}
	// A root's deletion changes its conversation's deleted_roots (unreadCount): read what it was.
	var was, root bool
	var channelID, dmID string
	err := tx.queryRow(ctx, `SELECT deleted_at IS NOT NULL, channel_seq IS NOT NULL, coalesce(channel_id, ''), coalesce(dm_id, '')
		FROM messages WHERE workspace_id = $1 AND id = $2 FOR UPDATE`, h.WorkspaceID, messageID).Scan(&was, &root, &channelID, &dmID)
	if errors.Is(err, pgx.ErrNoRows) {
		return NotFound("message")
	} else if err != nil {
		return err
	}
	tag, err := tx.exec(ctx, `UPDATE messages m SET kind = $3,
			quoted_message_id = (SELECT q.id FROM messages q WHERE q.workspace_id = $1 AND q.id = nullif($4, '')),
			nonce = CASE WHEN $5 <> '' AND NOT EXISTS (SELECT 1 FROM messages o WHERE o.author_id = m.author_id
				AND o.nonce = $5 AND o.id <> m.id) THEN $5 END,
			deleted_at = $6, body = CASE WHEN $6::timestamptz IS NULL THEN m.body ELSE '' END
		WHERE m.workspace_id = $1 AND m.id = $2`, h.WorkspaceID, messageID, d.Kind, d.QuotedMessageID, d.Nonce, d.DeletedAt)
	if err == nil && tag.RowsAffected() == 0 {
		return NotFound("message")
	}
	if now := d.DeletedAt != nil; err == nil && root && now != was {
		delta := 1
		if !now {
			delta = -1
		}
		err = tx.deletedRootsAdd(ctx, channelID, dmID, delta)
	}
	if err == nil && d.DeletedAt != nil {
		for _, q := range []string{
			`DELETE FROM reactions WHERE workspace_id = $1 AND message_id = $2`,
			`DELETE FROM reaction_counts WHERE workspace_id = $1 AND message_id = $2`,
			`DELETE FROM message_attachments WHERE workspace_id = $1 AND message_id = $2`,
		} {
			if _, err = tx.exec(ctx, q, h.WorkspaceID, messageID); err != nil {
				return err
			}
		}
	}
	if err == nil && d.Thread != nil && d.Thread.LastReplyAt != nil {
		_, err = tx.exec(ctx, `UPDATE thread_states SET last_thread_seq = greatest(last_thread_seq, $3), reply_count = $4,
				last_reply_at = $5, last_reply_author_ids = $6
			WHERE workspace_id = $1 AND root_message_id = $2`, h.WorkspaceID, messageID, d.LastThreadSeq,
			d.Thread.ReplyCount, *d.Thread.LastReplyAt, d.Thread.LastReplyAuthorIDs)
		if err == nil {
			// The source's sequence may end past the replies imported: the followers have read
			// up to it, so a later reply does not count the gap as unread.
			_, err = tx.exec(ctx, `UPDATE thread_follows SET last_seq = greatest(last_seq, $3),
					last_read_seq = greatest(last_read_seq, $3)
				WHERE workspace_id = $1 AND root_message_id = $2`, h.WorkspaceID, messageID, d.LastThreadSeq)
		}
	}
	return err
}

// HistoryThreadRead restores how far userID had read the thread of rootID (both imported) and
// whether they followed it, over the read-to-the-end the thread's details gave its followers;
// the position never passes the thread's last reply. Codes: not_found (thread or user).
func (tx *Tx) HistoryThreadRead(ctx context.Context, h History, rootID, userID string, r ArchiveThreadRead) error {
	tag, err := tx.exec(ctx, `INSERT INTO thread_follows AS f (root_message_id, user_id, workspace_id, following,
			last_seq, activity_at, last_read_seq, last_read_at)
		SELECT m.id, u.id, m.workspace_id, $4, coalesce(ts.last_thread_seq, 0), coalesce(ts.last_reply_at, m.created_at),
			least(greatest($5::bigint, 0), coalesce(ts.last_thread_seq, 0)), $6
		FROM messages m JOIN users u ON u.id = $3 LEFT JOIN thread_states ts ON ts.root_message_id = m.id
		WHERE m.workspace_id = $1 AND m.id = $2 AND m.channel_seq IS NOT NULL
		ON CONFLICT (root_message_id, user_id) DO UPDATE SET following = f.following OR EXCLUDED.following,
			last_read_seq = EXCLUDED.last_read_seq, last_read_at = EXCLUDED.last_read_at`,
		h.WorkspaceID, rootID, userID, r.Following, r.LastReadSeq, r.LastReadAt)
	if err == nil && tag.RowsAffected() == 0 {
		err = NotFound("thread or user")
	}
	return err
}

// HistoryAttachmentDetails gives an imported attachment who attached it and when.
func (tx *Tx) HistoryAttachmentDetails(ctx context.Context, h History, messageID, uploadID, by string, at time.Time) error {
	_, err := tx.exec(ctx, `UPDATE message_attachments SET attached_by = $4, created_at = $5
		WHERE workspace_id = $1 AND message_id = $2 AND upload_id = $3`, h.WorkspaceID, messageID, uploadID, by, at)
	return err
}

// HistoryUploadDetails gives an imported upload the source's nonce (left out when the owner holds
// it on another upload) and image dimensions.
func (tx *Tx) HistoryUploadDetails(ctx context.Context, h History, uploadID, nonce string, width, height *int) error {
	_, err := tx.exec(ctx, `UPDATE uploads u SET width = $4, height = $5,
			nonce = CASE WHEN $3 <> '' AND NOT EXISTS (SELECT 1 FROM uploads o WHERE o.owner_id = u.owner_id
				AND o.nonce = $3 AND o.id <> u.id) THEN $3 END
		WHERE workspace_id = $1 AND id = $2`, h.WorkspaceID, uploadID, nonce, width, height)
	return err
}

// HistoryReceipt sets how far userID has read a channel or conversation of the workspace, as
// the source had it. Codes: not_found (place, user).
func (tx *Tx) HistoryReceipt(ctx context.Context, h History, place Place, userID string, seq int64, at time.Time) error {
	table := "channels"
	if place.DMID != "" {
		table = "dms"
	}
	tag, err := tx.exec(ctx, `INSERT INTO read_receipts AS r (scope_id, user_id, workspace_id, last_read_seq, last_read_at)
		SELECT $1, u.id, $2, $4, $5 FROM users u
		WHERE u.id = $3 AND EXISTS (SELECT 1 FROM `+table+` p WHERE p.workspace_id = $2 AND p.id = $1)
		ON CONFLICT (scope_id, user_id) DO UPDATE SET last_read_seq = EXCLUDED.last_read_seq, last_read_at = EXCLUDED.last_read_at`,
		place.ID(), h.WorkspaceID, userID, seq, at)
	if err == nil && tag.RowsAffected() == 0 {
		err = NotFound("place or user")
	}
	return err
}

// HistoryBotParams is a bot created in the source workspace, with its command menu there.
type HistoryBotParams struct {
	UserID    string // the imported bot user
	CreatedBy string // a Natter user
	CreatedAt time.Time
	Commands  []BotCommand // ID is the source's id of the entry
}

// HistoryBot records a bot as created in the workspace (so its managers list and manage it)
// with its command menu; no token. Codes: invalid_request (not a bot), not_found.
func (tx *Tx) HistoryBot(ctx context.Context, h History, p HistoryBotParams) error {
	u, err := tx.UserGet(ctx, p.UserID)
	if err != nil {
		return err
	}
	if u.Kind != KindBot {
		return Invalid("%s is not a bot", p.UserID)
	}
	created := p.CreatedAt
	if created.IsZero() || created.After(tx.now) {
		created = tx.now
	}
	if _, err := tx.exec(ctx, `INSERT INTO bots (user_id, workspace_id, created_by, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (user_id) DO NOTHING`, p.UserID, h.WorkspaceID, p.CreatedBy, created); err != nil {
		return err
	}
	for _, c := range p.Commands {
		name, err := NormalizeBotCommand(c.Command)
		if err != nil {
			return err
		}
		id := NewID(PrefixBotCommand, c.CreatedAt)
		tag, err := tx.exec(ctx, `INSERT INTO bot_commands (id, workspace_id, bot_user_id, command, description, args_hint,
				created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, nullif($6, ''), $7, $8) ON CONFLICT (workspace_id, bot_user_id, command) DO NOTHING`,
			id, h.WorkspaceID, p.UserID, name, c.Description, c.ArgsHint, c.CreatedAt, c.UpdatedAt)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 && c.ID != "" {
			if err := tx.historyRecord(ctx, h, HistoryKindBotCommand, c.ID, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// HistoryWorkspaceOf finds the workspace an earlier run of source created from the exported
// workspace sourceID, when it is workspaceID. ok is false when workspaceID is not that import.
func (tx *Tx) HistoryWorkspaceOf(ctx context.Context, workspaceID, source, sourceID string) (History, bool, error) {
	var id string
	err := tx.queryRow(ctx, `SELECT target_id FROM import_records
		WHERE workspace_id = $1 AND source = $2 AND kind = $3 AND source_id = $4`,
		workspaceID, source, HistoryKindWorkspace, sourceID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return History{}, false, nil
	}
	if err != nil {
		return History{}, false, err
	}
	return History{WorkspaceID: workspaceID, Source: source}, true, nil
}
