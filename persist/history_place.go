package persist

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// HistoryChannelParams is a channel of the source.
type HistoryChannelParams struct {
	SourceID string
	// Name is slugified like any channel name. A public channel of that name already in the
	// workspace is the same channel (the history is added to it); a name taken otherwise gets a
	// numeric suffix.
	Name string
	// Title is the display title (a topic or purpose), cut to MaxChannelTitleLength.
	Title    string
	Private  bool
	Archived bool
	// CreatedAt is when the source created it; zero means now.
	CreatedAt time.Time
	// CreatorID is a Natter user (an imported person), or "".
	CreatorID string
	// MemberIDs are the members of a private channel (ignored for a public one, which every
	// member of the workspace reads). Only members of the workspace are added.
	MemberIDs []string
}

// HistoryChannel imports a channel and appends channel.created when it is new, so the people
// online see it appear. Codes: invalid_request (source id, name), conflict (the name and its
// numbered variants are all taken).
func (tx *Tx) HistoryChannel(ctx context.Context, h History, p HistoryChannelParams) (Imported, error) {
	id, ok, err := tx.historyKnown(ctx, h, HistoryKindChannel, p.SourceID)
	if err != nil || ok {
		return Imported{ID: id}, err
	}
	var name, title string
	if err := normalizeChannelName(&name, p.Name); err != nil {
		return Imported{}, err
	}
	if len([]rune(p.Title)) > MaxChannelTitleLength {
		p.Title = string([]rune(p.Title)[:MaxChannelTitleLength])
	}
	if err := normalizeChannelTitle(&title, p.Title); err != nil {
		return Imported{}, err
	}
	visibility := VisibilityPublic
	if p.Private {
		visibility = VisibilityPrivate
	}
	created := p.CreatedAt
	if created.IsZero() || created.After(tx.now) {
		created = tx.now
	}
	var existing, existingVisibility string
	err = tx.queryRow(ctx, `SELECT id, visibility FROM channels WHERE workspace_id = $1 AND name = $2`,
		h.WorkspaceID, name).Scan(&existing, &existingVisibility)
	switch {
	case err == nil && !p.Private && existingVisibility == VisibilityPublic:
		return Imported{ID: existing, Matched: true}, tx.historyRecord(ctx, h, HistoryKindChannel, p.SourceID, existing)
	case err == nil:
		if name, err = tx.historyFreeChannelName(ctx, h.WorkspaceID, name); err != nil {
			return Imported{}, err
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return Imported{}, err
	}
	var archivedAt *time.Time
	if p.Archived {
		archivedAt = &tx.now
	}
	id = NewID(PrefixChannel, created)
	c, err := scanChannel(tx.queryRow(ctx, `
		INSERT INTO channels (id, route_id, workspace_id, name, display_title, kind, created_by, created_at,
			updated_at, visibility, archived_at)
		VALUES ($1, $2, $3, $4, nullif($5, ''), $6, nullif($7, ''), $8, $9, $10, $11)
		RETURNING `+channelColumns,
		id, RouteID("C", id), h.WorkspaceID, name, title, DefaultChannelKind, p.CreatorID, created, tx.now,
		visibility, archivedAt))
	if err != nil {
		return Imported{}, err
	}
	if p.Private {
		if err := tx.HistoryChannelMembers(ctx, h, c.ID, p.MemberIDs); err != nil {
			return Imported{}, err
		}
	}
	if err := tx.historyRecord(ctx, h, HistoryKindChannel, p.SourceID, c.ID); err != nil {
		return Imported{}, err
	}
	_, err = tx.EventAppend(ctx, channelEvent("channel.created", c, p.CreatorID))
	return Imported{ID: c.ID, Created: true}, err
}

// HistoryChannelGet reads a channel of the import's workspace, whatever its visibility, as an
// import sees it (the name it was given, its members aside). Codes: not_found.
func (tx *Tx) HistoryChannelGet(ctx context.Context, h History, channelID string) (Channel, error) {
	c, err := scanChannel(tx.queryRow(ctx, `SELECT `+channelColumns+` FROM channels WHERE workspace_id = $1 AND id = $2`,
		h.WorkspaceID, channelID))
	return c, notFoundAs(err, "channel")
}

// historyFreeChannelName returns name-2 … name-99, the first free one in the workspace.
// Codes: conflict (all taken).
func (tx *Tx) historyFreeChannelName(ctx context.Context, workspaceID, name string) (string, error) {
	var candidates []string
	for i := 2; i < 100; i++ {
		candidates = append(candidates, name+"-"+strconv.Itoa(i))
	}
	free, err := tx.historyFirstFree(ctx, candidates, `SELECT name FROM channels WHERE name = ANY($1) AND workspace_id = $2`, workspaceID)
	if err != nil || free != "" {
		return free, err
	}
	return "", Conflict("the channel name %s and its numbered variants are all taken", name)
}

// HistoryChannelMembers adds people to an imported private channel, without events; those who
// are not members of the workspace (deactivated authors among them) and those already in it
// are passed over. Codes: not_found (no private channel of the workspace).
func (tx *Tx) HistoryChannelMembers(ctx context.Context, h History, channelID string, userIDs []string) error {
	var visibility string
	if err := tx.queryRow(ctx, `SELECT visibility FROM channels WHERE workspace_id = $1 AND id = $2`,
		h.WorkspaceID, channelID).Scan(&visibility); err != nil {
		return notFoundAs(err, "channel")
	}
	if visibility != VisibilityPrivate {
		return NotFound("private channel")
	}
	rows, err := tx.query(ctx, `INSERT INTO channel_members (channel_id, user_id, workspace_id, added_at)
		SELECT $1, wm.user_id, $2, $4 FROM workspace_members wm
		WHERE wm.workspace_id = $2 AND wm.user_id = ANY($3)
		ON CONFLICT DO NOTHING RETURNING user_id`, channelID, h.WorkspaceID, userIDs, tx.now)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		tx.noteMembershipChanged(h.WorkspaceID, id) // a bot's NATS permissions grow
	}
	return rows.Err()
}

// HistoryConversationParams is a direct conversation of the source.
type HistoryConversationParams struct {
	SourceID string
	// MemberIDs are Natter users (imported people, deactivated ones included): 2 to MaxDMMembers
	// once duplicates are removed. The workspace's conversation of exactly these members, if
	// there is one, is the same conversation.
	MemberIDs []string
	CreatedAt time.Time // zero means now
}

// HistoryConversation imports a direct conversation. Codes: invalid_request (source id, member
// count), not_found (a member is no user).
func (tx *Tx) HistoryConversation(ctx context.Context, h History, p HistoryConversationParams) (Imported, error) {
	id, ok, err := tx.historyKnown(ctx, h, HistoryKindConversation, p.SourceID)
	if err != nil || ok {
		return Imported{ID: id}, err
	}
	ids := slices.Clone(p.MemberIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) < 2 || len(ids) > MaxDMMembers {
		return Imported{}, Invalid("a direct conversation has 2 to %d members", MaxDMMembers)
	}
	var found int
	if err := tx.queryRow(ctx, `SELECT count(*) FROM users WHERE id = ANY($1)`, ids).Scan(&found); err != nil {
		return Imported{}, err
	}
	if found != len(ids) {
		return Imported{}, NotFound("conversation member")
	}
	created := p.CreatedAt
	if created.IsZero() || created.After(tx.now) {
		created = tx.now
	}
	id = NewID(PrefixDM, created)
	key := strings.Join(ids, ",")
	out := Imported{ID: id, Created: true}
	err = tx.queryRow(ctx, `INSERT INTO dms (id, route_id, workspace_id, member_key, created_by, created_at, last_activity_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6)
		ON CONFLICT (workspace_id, member_key) DO NOTHING RETURNING id`,
		id, RouteID("D", id), h.WorkspaceID, key, ids[0], created).Scan(&out.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		out = Imported{Matched: true}
		err = tx.queryRow(ctx, `SELECT id FROM dms WHERE workspace_id = $1 AND member_key = $2`, h.WorkspaceID, key).Scan(&out.ID)
	} else if err == nil {
		_, err = tx.exec(ctx, `INSERT INTO dm_members (workspace_id, dm_id, user_id) SELECT $1, $2, unnest($3::text[])`,
			h.WorkspaceID, out.ID, ids)
	}
	if err != nil {
		return Imported{}, err
	}
	return out, tx.historyRecord(ctx, h, HistoryKindConversation, p.SourceID, out.ID)
}

// HistoryReadThrough marks place read up to its current last sequence for each of userIDs
// (receipts only move forward), so the history imported there is not unread for the people
// who were in it at the source. Codes: not_found (no such place in the workspace).
func (tx *Tx) HistoryReadThrough(ctx context.Context, h History, place Place, userIDs []string) error {
	table := "channels"
	if place.DMID != "" {
		table = "dms"
	}
	var last int64
	if err := tx.queryRow(ctx, `SELECT last_seq FROM `+table+` WHERE workspace_id = $1 AND id = $2`,
		h.WorkspaceID, place.ID()).Scan(&last); err != nil {
		return notFoundAs(err, "place")
	}
	_, err := tx.exec(ctx, `INSERT INTO read_receipts AS r (scope_id, user_id, workspace_id, last_read_seq, last_read_at)
		SELECT $1, u.id, $2, $4, $5 FROM users u WHERE u.id = ANY($3)
		ON CONFLICT (scope_id, user_id) DO UPDATE SET last_read_seq = EXCLUDED.last_read_seq, last_read_at = EXCLUDED.last_read_at
			WHERE r.last_read_seq < EXCLUDED.last_read_seq`, place.ID(), h.WorkspaceID, userIDs, last, tx.now)
	return err
}
