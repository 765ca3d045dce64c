package persist

import (
	"context"
	"encoding/base64"
	"strings"
	"time"
	"unicode/utf8"
)

// A person's own standing in a channel (issue 30). Everyone in a workspace, guests aside, is in
// every public channel until they leave it; leaving takes the channel out of their sidebar and
// their notifications (push and email), never out of what they may read: they can open it, search
// it, and join it again. A private channel is left by leaving its member list. Starring is a mark
// of the person's own. Rows (channel_person_states) record only what a person changed.

// channelLeft is the SQL test "user userID (an expression) left channel c (an alias)".
func channelLeft(c, userID string) string {
	return `EXISTS (SELECT 1 FROM channel_person_states ls WHERE ls.channel_id = ` + c + `.id AND ls.user_id = ` + userID + `
		AND ls.left_at IS NOT NULL)`
}

// ChannelStar is a person's star on a channel.
type ChannelStar struct {
	ChannelID string     `json:"channel_id"`
	Starred   bool       `json:"starred"`
	StarredAt *time.Time `json:"starred_at,omitempty"`
}

// ChannelStarSet stars (on) or unstars a channel the actor can read, for the actor alone; doing
// it twice changes nothing. Codes: not_found (channel, or one the actor cannot read), forbidden.
func (tx *Tx) ChannelStarSet(ctx context.Context, actor Actor, channelID string, on bool) (ChannelStar, error) {
	c, _, err := tx.ChannelForRead(ctx, actor, channelID)
	if err != nil {
		return ChannelStar{}, err
	}
	out := ChannelStar{ChannelID: c.ID, Starred: on}
	if !on {
		_, err := tx.exec(ctx, `UPDATE channel_person_states SET starred_at = NULL WHERE channel_id = $1 AND user_id = $2`, c.ID, actor.UserID)
		if err != nil {
			return out, err
		}
		return out, tx.channelStateTidy(ctx, c.ID, actor.UserID)
	}
	err = tx.queryRow(ctx, `INSERT INTO channel_person_states (channel_id, user_id, workspace_id, starred_at)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (channel_id, user_id) DO UPDATE SET starred_at = coalesce(channel_person_states.starred_at, EXCLUDED.starred_at)
		RETURNING starred_at`, c.ID, actor.UserID, c.WorkspaceID, tx.now).Scan(&out.StarredAt)
	return out, err
}

// channelStateTidy drops a person's row of a channel once it records nothing.
func (tx *Tx) channelStateTidy(ctx context.Context, channelID, userID string) error {
	_, err := tx.exec(ctx, `DELETE FROM channel_person_states WHERE channel_id = $1 AND user_id = $2
		AND left_at IS NULL AND starred_at IS NULL`, channelID, userID)
	return err
}

// channelStatesForget drops what the listed people changed in the workspace's channels, when
// they leave it, become guests or are deleted: the public channels' member counts (which count
// neither) stay right, and someone who comes back starts in every public channel.
func (tx *Tx) channelStatesForget(ctx context.Context, workspaceID string, userIDs []string) error {
	_, err := tx.exec(ctx, `DELETE FROM channel_person_states WHERE workspace_id = $1 AND user_id = ANY($2)`, workspaceID, userIDs)
	return err
}

// ChannelJoin puts the actor (a person) back into a public channel they left; they are in every
// other public channel already, and in the private ones they read (a private channel they are not
// in does not exist for them). Joining twice changes nothing (joined reports whether this call
// did). An archived channel cannot be joined. The answer carries the actor's standing and the
// member count. Codes: not_found, forbidden (archived; not a member of the workspace).
func (tx *Tx) ChannelJoin(ctx context.Context, actor Actor, channelID string) (Channel, bool, error) {
	c, _, err := tx.ChannelForRead(ctx, actor, channelID)
	if err != nil {
		return Channel{}, false, err
	}
	if c.ArchivedAt != nil {
		return Channel{}, false, Forbidden("#%s is archived: it can be read, not joined", c.Name)
	}
	tag, err := tx.exec(ctx, `UPDATE channel_person_states SET left_at = NULL
		WHERE channel_id = $1 AND user_id = $2 AND left_at IS NOT NULL`, c.ID, actor.UserID)
	if err != nil {
		return Channel{}, false, err
	}
	if err := tx.channelStateTidy(ctx, c.ID, actor.UserID); err != nil {
		return Channel{}, false, err
	}
	c, err = tx.channelStanding(ctx, c, actor.UserID)
	return c, tag.RowsAffected() > 0, err
}

// ChannelLeave takes the actor out of a channel: a public one leaves their sidebar and their
// notifications, and its star goes; a private one is left as ChannelMemberRemove leaves it (with
// channel.member_removed, returned; its last member may leave too, and the moderation view then
// shows it with no members, for an owner or moderator to archive). Leaving a public channel twice
// changes nothing. Refused: the workspace's default channel (#general while it is live, else its
// oldest live public channel), which everyone stays in, and the guests' channel for a guest,
// their only one. Codes: not_found, conflict (the refusals above), forbidden.
func (tx *Tx) ChannelLeave(ctx context.Context, actor Actor, channelID string) (Channel, *Event, error) {
	c, m, err := tx.ChannelForRead(ctx, actor, channelID)
	if err != nil {
		return Channel{}, nil, err
	}
	if m.Role == RoleGuest {
		return Channel{}, nil, Conflict("#%s is the guests' channel: a guest stays in it", c.Name)
	}
	if c.Visibility == VisibilityPrivate {
		change, ev, err := tx.ChannelMemberRemove(ctx, actor, c.ID, actor.UserID)
		if err != nil {
			return Channel{}, nil, err
		}
		out, err := tx.channelStanding(ctx, change.Channel, actor.UserID)
		return out, &ev, err
	}
	def, err := tx.defaultChannelID(ctx, c.WorkspaceID)
	if err != nil {
		return Channel{}, nil, err
	}
	if def == c.ID {
		return Channel{}, nil, Conflict("#%s is the workspace's default channel: everyone stays in it (mute it instead)", c.Name)
	}
	if _, err := tx.exec(ctx, `INSERT INTO channel_person_states (channel_id, user_id, workspace_id, left_at)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (channel_id, user_id) DO UPDATE SET left_at = coalesce(channel_person_states.left_at, EXCLUDED.left_at),
			starred_at = NULL`, c.ID, actor.UserID, c.WorkspaceID, tx.now); err != nil {
		return Channel{}, nil, err
	}
	out, err := tx.channelStanding(ctx, c, actor.UserID)
	return out, nil, err
}

// defaultChannelID is the workspace's default channel: #general while it is live, else its
// oldest live public channel other than the guests' (as a setup code's claim suggests); "" when
// it has none.
func (tx *Tx) defaultChannelID(ctx context.Context, workspaceID string) (string, error) {
	var id string
	err := tx.queryRow(ctx, `SELECT id FROM channels
		WHERE workspace_id = $1 AND archived_at IS NULL AND name <> $2 AND visibility = 'public'
		ORDER BY name = $3 DESC, created_at, id LIMIT 1`, workspaceID, GuestChannel, DevChannel).Scan(&id)
	if e := notFoundAs(err, "channel"); e != err {
		return "", nil
	}
	return id, err
}

// channelStanding fills c's reader fields for userID: joined, starred, notification level and
// member count.
func (tx *Tx) channelStanding(ctx context.Context, c Channel, userID string) (Channel, error) {
	rows, err := tx.query(ctx, `SELECT `+channelColumnsOf("c.")+`, `+standingColumns+`
		FROM channels c `+standingJoins+` WHERE c.id = $2`, c.WorkspaceID, c.ID, userID)
	if err != nil {
		return Channel{}, err
	}
	list, err := scanStandings(rows)
	if err != nil {
		return Channel{}, err
	}
	if len(list) == 0 {
		return Channel{}, NotFound("channel")
	}
	return list[0], nil
}

// standingColumns are a channel's reader fields, read with standingJoins, where $1 is the
// workspace and $3 the reader. The public member count is the workspace's people and bots
// (guests and deleted accounts aside: an index-only count of the memberships, less the few
// deleted) less those who left; the private one is kept by the member list's trigger.
const standingColumns = `s.left_at IS NULL, s.starred_at IS NOT NULL, coalesce(p.level, '` + DefaultChannelNotify + `'),
	CASE WHEN c.visibility = 'private' THEN c.member_count ELSE
		(SELECT count(*) FROM workspace_members wm WHERE wm.workspace_id = $1 AND wm.role <> 'guest')
		- (SELECT count(*) FROM workspace_members wm JOIN users u ON u.id = wm.user_id AND u.deleted_at IS NOT NULL
			WHERE wm.workspace_id = $1 AND wm.role <> 'guest')
		- c.left_count END`

const standingJoins = `LEFT JOIN channel_person_states s ON s.channel_id = c.id AND s.user_id = $3
	LEFT JOIN channel_notification_preferences p ON p.channel_id = c.id AND p.user_id = $3`

// scanStandings reads channels with standingColumns.
func scanStandings(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
	Close()
}) ([]Channel, error) {
	defer rows.Close()
	out := []Channel{}
	for rows.Next() {
		var c Channel
		var joined, starred bool
		var level string
		var count int64
		if err := rows.Scan(append(channelDest(&c), &joined, &starred, &level, &count)...); err != nil {
			return nil, err
		}
		c.Archived = c.ArchivedAt != nil
		members := int(max(count, 0))
		c.Joined, c.Starred, c.NotificationLevel, c.MemberCount = &joined, &starred, level, &members
		out = append(out, c)
	}
	return out, rows.Err()
}

// Channel browser page sizes.
const (
	// ChannelBrowseDefault is the page size of a browse without limit.
	ChannelBrowseDefault = 50
	// ChannelBrowseMax is the largest page a browse returns.
	ChannelBrowseMax = 200
	// maxBrowseQuery bounds the search text, in characters.
	maxBrowseQuery = 100
)

// ChannelBrowseParams filter and page the channel browser.
type ChannelBrowseParams struct {
	// Query keeps channels whose name or display title holds it, case-insensitively and
	// literally; a leading # is ignored.
	Query string
	// Limit is the page size: 0 means ChannelBrowseDefault; above ChannelBrowseMax, the max.
	Limit int
	// Cursor is a previous page's NextCursor; "" is the first page.
	Cursor string
}

// ChannelBrowsePage is one page of the browser, by name.
type ChannelBrowsePage struct {
	Channels   []Channel `json:"channels"`
	NextCursor string    `json:"next_cursor,omitempty"`
	HasMore    bool      `json:"has_more"`
}

// ChannelBrowse is the channel browser: the workspace's live channels the actor may read (every
// public one, joined or not, and the private ones they are in), by name, a page at a time, with
// the actor's standing and each member count. A page costs one statement over the channels of
// one workspace (the name index orders it; nothing reads messages) whatever the history.
// Codes: not_found (workspace), forbidden (not a member; a guest), invalid_request (limit,
// cursor, query).
func (tx *Tx) ChannelBrowse(ctx context.Context, actor Actor, workspaceID string, p ChannelBrowseParams) (ChannelBrowsePage, error) {
	m, err := tx.requireMemberToRead(ctx, workspaceID, actor)
	if err != nil {
		return ChannelBrowsePage{}, err
	}
	if m.Role == RoleGuest {
		return ChannelBrowsePage{}, Forbidden("guests in the waiting room see only #%s", GuestChannel)
	}
	limit := p.Limit
	switch {
	case limit < 0:
		return ChannelBrowsePage{}, Invalid("limit must be between 1 and %d", ChannelBrowseMax)
	case limit == 0:
		limit = ChannelBrowseDefault
	case limit > ChannelBrowseMax:
		limit = ChannelBrowseMax
	}
	after := ""
	if p.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(p.Cursor)
		if err != nil || len(raw) < 2 || raw[0] != 'c' || !utf8.Valid(raw) {
			return ChannelBrowsePage{}, Invalid("cursor is not one this server issued")
		}
		after = string(raw[1:])
	}
	q := strings.TrimPrefix(strings.TrimSpace(p.Query), "#")
	if utf8.RuneCountInString(q) > maxBrowseQuery {
		return ChannelBrowsePage{}, Invalid("q must be at most %d characters", maxBrowseQuery)
	}
	rows, err := tx.query(ctx, `SELECT `+channelColumnsOf("c.")+`, `+standingColumns+`
		FROM channels c `+standingJoins+`
		WHERE c.workspace_id = $1 AND c.archived_at IS NULL AND c.name > $2 AND `+channelReadable("c", "$3")+`
			AND ($4 = '' OR strpos(lower(c.name), lower($4)) > 0 OR strpos(lower(coalesce(c.display_title, '')), lower($4)) > 0)
		ORDER BY c.name LIMIT $5`, workspaceID, after, actor.UserID, q, limit+1)
	if err != nil {
		return ChannelBrowsePage{}, err
	}
	list, err := scanStandings(rows)
	if err != nil {
		return ChannelBrowsePage{}, err
	}
	page := ChannelBrowsePage{Channels: list}
	if len(list) > limit {
		page.Channels, page.HasMore = list[:limit], true
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte("c" + list[limit-1].Name))
	}
	return page, nil
}
