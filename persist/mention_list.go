package persist

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Mentions view limits.
const (
	DefaultMentionLimit = 50
	MaxMentionLimit     = 100
)

// MentionListParams asks for a page of the messages that mention the actor in a workspace.
type MentionListParams struct {
	WorkspaceID string
	Limit       int    // 1..MaxMentionLimit; 0 means DefaultMentionLimit
	Cursor      string // next_cursor of the previous page
}

// MentionPage is a page of mentions, newest first; NextCursor is nil on the last page.
type MentionPage struct {
	Messages   []Message `json:"messages"`
	NextCursor *string   `json:"next_cursor"`
}

// mentionCursor is the position after a page's last message.
type mentionCursor struct {
	At time.Time `json:"t"`
	ID string    `json:"i"`
}

// broadcastNames is the SQL list of the broadcast names, as migration 0030's partial index
// spells it (a query must spell it the same way for the planner to use it).
const broadcastNames = `('here', 'channel', 'everyone')`

// MentionList returns the messages of a workspace that mention the actor, newest first, read
// from the index of mentions (migration 0030), never from the history: those naming their handle
// in a place they may read now, and the broadcasts (@here, @channel, @everyone) of the places
// they are in — channels they have not left, private channels they were added to, their direct
// conversations (for a bot token, only with dms:read), a guest only the guest channel — posted
// since they joined the workspace (a private channel: since they were added). The view keeps
// @here like @channel, for everyone in the place when it was read: who was online when it was
// posted is not kept. Their own and deleted messages are never listed. Codes: invalid_request
// (workspace_id, limit, cursor), not_found / forbidden (the workspace).
func (tx *Tx) MentionList(ctx context.Context, actor Actor, p MentionListParams) (MentionPage, error) {
	switch {
	case p.WorkspaceID == "":
		return MentionPage{}, Invalid("workspace_id is required")
	case p.Limit < 0:
		return MentionPage{}, Invalid("limit must be 1 to %d", MaxMentionLimit)
	case p.Limit == 0:
		p.Limit = DefaultMentionLimit
	}
	p.Limit = min(p.Limit, MaxMentionLimit)
	after, err := decodeMentionCursor(p.Cursor)
	if err != nil {
		return MentionPage{}, err
	}
	member, err := tx.requireMemberToRead(ctx, p.WorkspaceID, actor)
	if err != nil {
		return MentionPage{}, err
	}
	sql, args := mentionStatement(actor, member, p.Limit+1, after)
	rows, err := tx.query(ctx, sql, args...)
	if err != nil {
		return MentionPage{}, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return MentionPage{}, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return MentionPage{}, err
	}
	msgs, err := tx.scanMessages(tx.query(ctx, `SELECT `+messageColumns+` FROM `+messageFrom+`
		WHERE m.workspace_id = $1 AND m.id = ANY($2)`, p.WorkspaceID, ids))
	if err != nil {
		return MentionPage{}, err
	}
	slices.SortFunc(msgs, func(a, b Message) int {
		return slices.Index(ids, a.ID) - slices.Index(ids, b.ID)
	})
	out := MentionPage{Messages: msgs}
	if len(out.Messages) > p.Limit {
		out.Messages = out.Messages[:p.Limit]
		last := out.Messages[p.Limit-1]
		raw, _ := json.Marshal(mentionCursor{At: last.CreatedAt, ID: last.ID}) // plain fields always marshal
		next := base64.RawURLEncoding.EncodeToString(raw)
		out.NextCursor = &next
	}
	return out, tx.messagesHydrate(ctx, actor.UserID, out.Messages)
}

// decodeMentionCursor reads a cursor; "" is the first page. Codes: invalid_request.
func decodeMentionCursor(s string) (*mentionCursor, error) {
	if s == "" {
		return nil, nil
	}
	var c mentionCursor
	raw, err := base64.RawURLEncoding.DecodeString(s)
	// The id goes back to Postgres: it must be text Postgres can hold.
	if err != nil || json.Unmarshal(raw, &c) != nil || c.ID == "" || !utf8.ValidString(c.ID) || strings.IndexByte(c.ID, 0) >= 0 {
		return nil, Invalid("cursor is not one this list gave; start again without it")
	}
	return &c, nil
}

// mentionStatement is the statement of a page of mentions: the ids of at most limit messages,
// newest first. Each branch reads an index newest first and stops at the page: the actor's
// handle (message_mentions_name_idx), and the workspace's broadcasts
// (message_mentions_broadcast_idx), kept when in a place the actor is in. Everyone is in every
// public channel they have not left, so most broadcasts walked are the actor's; one who left
// most channels walks the others' broadcasts too, never the history.
func mentionStatement(actor Actor, member Member, limit int, after *mentionCursor) (string, []any) {
	args := []any{member.WorkspaceID, actor.UserID, limit, member.JoinedAt}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	window := "true"
	if after != nil {
		window = `(mm.created_at, mm.message_id) < (` + arg(after.At) + `, ` + arg(after.ID) + `)`
	}
	guest := member.Role == RoleGuest
	visible := `m.deleted_at IS NULL AND m.author_id <> $2`
	// The channels whose broadcasts address the actor: those they are in; a private one's only
	// since they were added.
	channels := `SELECT c.id FROM channels c WHERE c.workspace_id = $1
				AND (c.visibility <> 'private' OR EXISTS (SELECT 1 FROM channel_members cm
					WHERE cm.channel_id = c.id AND cm.user_id = $2))
				AND NOT ` + channelLeft("c", "$2")
	if guest {
		channels += ` AND c.name = ` + arg(GuestChannel)
	}
	places := `(mm.channel_id IN (` + channels + `)
				AND NOT EXISTS (SELECT 1 FROM channel_members cm WHERE cm.channel_id = mm.channel_id
					AND cm.user_id = $2 AND cm.added_at > mm.created_at))`
	if !actor.IsBotToken() || actor.HasScope(ScopeDMsRead) {
		places = `(` + places + ` OR mm.dm_id IN (SELECT dm_id FROM dm_members WHERE workspace_id = $1 AND user_id = $2))`
	}
	// DISTINCT: a message holding two broadcasts has a row for each, and the page counts messages.
	return `SELECT message_id FROM (
			(SELECT mm.message_id, mm.created_at FROM message_mentions mm JOIN messages m ON m.id = mm.message_id
			WHERE mm.workspace_id = $1 AND mm.name = (SELECT handle FROM users WHERE id = $2)
				AND ` + window + ` AND ` + visible + ` AND ` + readablePlaces("m", actor, guest, arg) + `
			ORDER BY mm.created_at DESC, mm.message_id DESC LIMIT $3)
		UNION
			(SELECT DISTINCT mm.message_id, mm.created_at FROM message_mentions mm JOIN messages m ON m.id = mm.message_id
			WHERE mm.workspace_id = $1 AND mm.name IN ` + broadcastNames + ` AND mm.created_at >= $4
				AND ` + window + ` AND ` + visible + ` AND ` + places + `
			ORDER BY mm.created_at DESC, mm.message_id DESC LIMIT $3)) hits
		ORDER BY created_at DESC, message_id DESC LIMIT $3`, args
}
