package persist

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Channel is a named conversation of a workspace.
type Channel struct {
	ID              string     `json:"id"`
	RouteID         string     `json:"route_id"`
	WorkspaceID     string     `json:"workspace_id"`
	Name            string     `json:"name"`
	DisplayTitle    string     `json:"display_title,omitempty"`
	Kind            string     `json:"kind"`
	Archived        bool       `json:"archived"`
	ArchivedAt      *time.Time `json:"archived_at,omitempty"`
	ExternalManaged bool       `json:"external_managed"`
	ExternalRef     string     `json:"external_ref,omitempty"`
	ExternalURL     string     `json:"external_url,omitempty"`
	SidebarSection  string     `json:"sidebar_section,omitempty"`
	// Visibility is VisibilityPublic or VisibilityPrivate, fixed at creation.
	Visibility string    `json:"visibility"`
	CreatedBy  string    `json:"created_by,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	LastSeq    int64     `json:"last_seq"`
	// LastReadSeq, UnreadCount and MentionCount are the reader's state; only ChannelList fills
	// them.
	LastReadSeq  *int64 `json:"last_read_seq,omitempty"`
	UnreadCount  *int64 `json:"unread_count,omitempty"`
	MentionCount *int64 `json:"mention_count,omitempty"`
	// Joined, Starred and NotificationLevel are the reader's standing (channelstate.go), filled
	// by ChannelList, the browser, join and leave; MemberCount by the last three.
	Joined            *bool  `json:"joined,omitempty"`
	Starred           *bool  `json:"starred,omitempty"`
	NotificationLevel string `json:"notification_level,omitempty"`
	MemberCount       *int   `json:"member_count,omitempty"`
}

// channelColumns are the columns scanChannel reads.
var channelColumns = channelColumnsOf("")

// channelColumnsOf is channelColumns of the table aliased by prefix ("c.").
func channelColumnsOf(p string) string {
	return p + "id, " + p + "route_id, " + p + "workspace_id, " + p + "name, coalesce(" + p + "display_title, ''), " + p + "kind, " +
		p + "archived_at, " + p + "external_managed, coalesce(" + p + "external_ref, ''), coalesce(" + p + "external_url, ''), coalesce(" +
		p + "sidebar_section, ''), coalesce(" + p + "created_by, ''), " + p + "created_at, " + p + "updated_at, " + p + "last_seq, " + p + "visibility"
}

// channelDest is where scanChannel's columns go.
func channelDest(c *Channel) []any {
	return []any{&c.ID, &c.RouteID, &c.WorkspaceID, &c.Name, &c.DisplayTitle, &c.Kind, &c.ArchivedAt,
		&c.ExternalManaged, &c.ExternalRef, &c.ExternalURL, &c.SidebarSection, &c.CreatedBy, &c.CreatedAt,
		&c.UpdatedAt, &c.LastSeq, &c.Visibility}
}

func scanChannel(row pgx.Row) (Channel, error) {
	var c Channel
	err := row.Scan(channelDest(&c)...)
	c.Archived = c.ArchivedAt != nil
	return c, err
}

// Channel field limits.
const (
	// MaxChannelTitleLength bounds display_title, in Unicode characters after trimming.
	MaxChannelTitleLength = 200
	// MaxSidebarSectionLength bounds sidebar_section, in Unicode characters after trimming.
	MaxSidebarSectionLength = 80
	// MaxExternalRefLength bounds external_ref, in bytes.
	MaxExternalRefLength = 512
	// MaxExternalURLLength bounds external_url, in bytes.
	MaxExternalURLLength = 2048
	// DefaultChannelKind is the kind of a channel created without one.
	DefaultChannelKind = "public"
)

// ChannelCreateParams are the fields of a new channel. Empty strings mean "none" (for Kind:
// DefaultChannelKind).
type ChannelCreateParams struct {
	Name            string
	DisplayTitle    string
	Kind            string
	ExternalManaged bool
	ExternalRef     string
	ExternalURL     string
	SidebarSection  string
	// Visibility is VisibilityPublic (also for "") or VisibilityPrivate.
	Visibility string
}

// ChannelCreate creates a channel and appends channel.created. The actor must be a member who
// is not a guest and may write (not timed out or blocked). The name is slugified and unique in
// the workspace. A private channel's creator (a person, or the bot whose token holds
// channels:write) is its first member. Codes: invalid_request, not_found (workspace), forbidden,
// conflict (name taken).
func (tx *Tx) ChannelCreate(ctx context.Context, actor Actor, workspaceID string, p ChannelCreateParams) (Channel, Event, error) {
	m, err := tx.requireMember(ctx, workspaceID, actor)
	if err != nil {
		return Channel{}, Event{}, err
	}
	if err := tx.requireFullWriter(ctx, m, "create channels"); err != nil {
		return Channel{}, Event{}, err
	}
	c := Channel{WorkspaceID: workspaceID, ExternalManaged: p.ExternalManaged, Kind: DefaultChannelKind}
	fields := []error{
		normalizeVisibility(&c.Visibility, p.Visibility),
		normalizeChannelName(&c.Name, p.Name),
		normalizeChannelTitle(&c.DisplayTitle, p.DisplayTitle),
		normalizeExternalRef(&c.ExternalRef, p.ExternalRef),
		normalizeExternalURL(&c.ExternalURL, p.ExternalURL),
		normalizeSidebarSection(&c.SidebarSection, p.SidebarSection),
	}
	if strings.TrimSpace(p.Kind) != "" {
		fields = append(fields, normalizeChannelKind(&c.Kind, p.Kind))
	}
	if err := firstError(fields); err != nil {
		return Channel{}, Event{}, err
	}
	id := NewID(PrefixChannel, tx.now)
	c, err = scanChannel(tx.queryRow(ctx, `
		INSERT INTO channels (id, route_id, workspace_id, name, display_title, kind, external_managed,
			external_ref, external_url, sidebar_section, created_by, created_at, updated_at, visibility)
		VALUES ($1, $2, $3, $4, nullif($5, ''), $6, $7, nullif($8, ''), nullif($9, ''), nullif($10, ''),
			$11, $12, $12, $13)
		RETURNING `+channelColumns,
		id, RouteID("C", id), workspaceID, c.Name, c.DisplayTitle, c.Kind, c.ExternalManaged, c.ExternalRef,
		c.ExternalURL, c.SidebarSection, actor.UserID, tx.now, c.Visibility))
	if err != nil {
		return Channel{}, Event{}, err
	}
	if c.Visibility == VisibilityPrivate {
		if _, err := tx.exec(ctx, `INSERT INTO channel_members (channel_id, user_id, workspace_id, added_by, added_at)
			VALUES ($1, $2, $3, $2, $4)`, c.ID, actor.UserID, workspaceID, tx.now); err != nil {
			return Channel{}, Event{}, err
		}
		tx.noteMembershipChanged(workspaceID, actor.UserID) // a bot's NATS permissions grow
	}
	ev, err := tx.EventAppend(ctx, channelEvent("channel.created", c, actor.UserID))
	return c, ev, err
}

// ChannelList returns the channels the actor may see, ordered by name, archived ones included:
// the public ones and the private ones the actor is in. A guest sees only the guest channel,
// which is created (with channel.created) when missing.
// Codes: not_found (workspace), forbidden (not a member).
func (tx *Tx) ChannelList(ctx context.Context, actor Actor, workspaceID string) ([]Channel, error) {
	m, err := tx.requireMemberToRead(ctx, workspaceID, actor)
	if err != nil {
		return nil, err
	}
	if m.Role != RoleGuest {
		return tx.channelsOf(ctx, m, "")
	}
	// Only a guest's listing may write (its channel), so only it holds the membership.
	if m, err = tx.requireMember(ctx, workspaceID, actor); err != nil {
		return nil, err
	}
	c, err := tx.guestChannelEnsure(ctx, workspaceID, actor.UserID)
	if err != nil {
		return nil, err
	}
	return tx.channelsOf(ctx, m, c.ID)
}

// ChannelList is Tx.ChannelList outside a transaction: the membership and the listing are one
// statement each on the pool, with no BEGIN, no COMMIT and no row lock, whose commit would wait
// for a WAL flush (docs/performance.md, "Lighter listings"). A read has nothing to keep
// consistent with a concurrent change: each statement of a read-committed transaction saw its
// own snapshot anyway. A guest's listing, which may create the guest channel, runs in one.
func (s *Store) ChannelList(ctx context.Context, actor Actor, workspaceID string) ([]Channel, error) {
	return ReadV(ctx, s, func(r *Reader) ([]Channel, error) {
		m, err := r.requireMemberToRead(ctx, workspaceID, actor)
		if err != nil {
			return nil, err
		}
		if m.Role == RoleGuest {
			return WithTxV(ctx, s, func(tx *Tx) ([]Channel, error) { return tx.ChannelList(ctx, actor, workspaceID) })
		}
		return r.channelsOf(ctx, m, "")
	})
}

// channelsOf lists the channels of a workspace that the member may read (only the one named
// only, when it is not ""), by name, each with the reader's read state, mention count
// (mentionCount) and standing (joined, starred, level): one statement, so a workspace of 1,000
// channels costs one round trip and no list of ids sent back (docs/performance.md, "The channel
// list"). The rows are scanned into one Channel, copied out, and their reader fields point into
// a block of states allocated per 64 rows: not a Channel, a list of destinations and five small
// allocations per row.
func (tx *Reader) channelsOf(ctx context.Context, m Member, only string) ([]Channel, error) {
	args := []any{m.WorkspaceID, m.UserID, m.JoinedAt}
	if only != "" {
		args = append(args, only)
	}
	rows, err := tx.query(ctx, channelListStatement(only != ""), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Channel{}
	var c Channel
	var st readerState
	dest := append(channelDest(&c), &st.lastRead, &st.unread, &st.mentions, &st.joined, &st.starred, &c.NotificationLevel)
	var states []readerState
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if len(states) == 0 {
			states = make([]readerState, 64)
		}
		states[0] = st
		kept := &states[0]
		states = states[1:]
		c.Archived = c.ArchivedAt != nil
		c.LastReadSeq, c.UnreadCount, c.MentionCount, c.Joined, c.Starred = &kept.lastRead, &kept.unread, &kept.mentions, &kept.joined, &kept.starred
		out = append(out, c)
	}
	return out, rows.Err()
}

// readerState holds the reader's fields of one row of channelsOf, which Channel points to.
type readerState struct {
	lastRead, unread, mentions int64
	joined, starred            bool
}

// channelListStatement is channelsOf's statement: $1 the workspace, $2 the reader, $3 when they
// joined it, and with only, $4 the one channel wanted.
func channelListStatement(only bool) string {
	filter := ""
	if only {
		filter = ` AND c.id = $4`
	}
	mark := "coalesce(r.last_read_seq, 0)"
	return `WITH RECURSIVE ` + ownRoots(channelScope, "$2") + `
		SELECT ` + channelColumnsOf("c.") + `, ` + mark + `,
			` + unreadCount(channelScope, "c", mark, "$2", "o.seq") + `,
			` + mentionCount("c", mark, "$2", "s.left_at IS NULL", "greatest($3, cm.added_at)") + `,
			s.left_at IS NULL, s.starred_at IS NOT NULL, coalesce(p.level, '` + DefaultChannelNotify + `')
		FROM channels c LEFT JOIN read_receipts r ON r.scope_id = c.id AND r.user_id = $2
			LEFT JOIN own_roots o ON o.place = c.id
			LEFT JOIN channel_person_states s ON s.channel_id = c.id AND s.user_id = $2
			LEFT JOIN channel_notification_preferences p ON p.channel_id = c.id AND p.user_id = $2
			LEFT JOIN channel_members cm ON cm.channel_id = c.id AND cm.user_id = $2
		WHERE c.workspace_id = $1 AND ` + channelReadable("c", "$2") + filter + ` ORDER BY c.name`
}

// requireChannelManager admits the workspace owner and bot tokens (the route checked
// channels:write) whose owner (a user bot) or issuer (a service bot) is the workspace owner now:
// a bot a person creates never exceeds that person, so a moderator's bot is refused as the
// moderator is. Codes: forbidden.
func (tx *Tx) requireChannelManager(ctx context.Context, actor Actor, m Member) error {
	if m.Role == RoleOwner {
		return nil
	}
	if actor.IsBotToken() && m.owner != nil && m.owner.Role == RoleOwner {
		return nil
	}
	return Forbidden("workspace owner permission required")
}

// channelModeration decides how ChannelUpdate admits the actor to a private channel: its members
// as for any channel (moderating false); the owner and moderators (people) who are not in it
// only to archive or unarchive it, which is all the moderation view offers (moderating true, and
// a moderator may do it though channel changes are otherwise the owner's); anyone else finds no
// such channel. Codes: not_found, forbidden.
func (tx *Tx) channelModeration(ctx context.Context, actor Actor, m Member, c Channel, p ChannelPatch) (bool, error) {
	if c.Visibility != VisibilityPrivate {
		return false, nil
	}
	in, err := tx.channelMemberIs(ctx, c.ID, actor.UserID)
	if err != nil {
		return false, err
	}
	manager := !actor.IsBotToken() && actor.Kind != KindBot && requireManager(m) == nil
	archiveOnly := p.Archived != nil && p == ChannelPatch{Archived: p.Archived}
	switch {
	case manager && archiveOnly:
		return true, nil
	case in:
		return false, nil
	case manager:
		return false, Forbidden("owners and moderators may only archive or unarchive a private channel they are not in")
	}
	return false, NotFound("channel")
}

// ChannelPatch holds the fields of PATCH /api/channels/{id}; nil means unchanged. For the
// nullable fields (DisplayTitle, ExternalRef, ExternalURL, SidebarSection) "" clears.
type ChannelPatch struct {
	Name            *string
	DisplayTitle    *string
	Kind            *string
	Archived        *bool
	ExternalManaged *bool
	ExternalRef     *string
	ExternalURL     *string
	SidebarSection  *string
	// Visibility may only repeat the channel's own: it is fixed at creation.
	Visibility *string
}

// ChannelUpdate applies a patch to a channel and appends channel.updated (with the resulting
// archived flag). Only the workspace owner, or a bot token (whose route already required
// channels:write), may; archived=true fills archived_at (keeping an earlier one), false clears
// it. The guest channel keeps its name, and no channel may be renamed into it, so guests never
// see another channel's history.
// Codes: invalid_request, not_found, forbidden, conflict (name taken).
func (tx *Tx) ChannelUpdate(ctx context.Context, actor Actor, channelID string, p ChannelPatch) (Channel, Event, error) {
	c, err := scanChannel(tx.queryRow(ctx, `SELECT `+channelColumns+` FROM channels WHERE id = $1 FOR UPDATE`, channelID))
	if err != nil {
		return Channel{}, Event{}, notFoundAs(err, "channel")
	}
	m, err := tx.requireMember(ctx, c.WorkspaceID, actor)
	if err != nil {
		return Channel{}, Event{}, err
	}
	moderating, err := tx.channelModeration(ctx, actor, m, c, p)
	if err != nil {
		return Channel{}, Event{}, err
	}
	if !moderating {
		if err := tx.requireChannelManager(ctx, actor, m); err != nil {
			return Channel{}, Event{}, err
		}
	}
	if err := tx.requireWriter(ctx, m); err != nil {
		return Channel{}, Event{}, err
	}
	if p == (ChannelPatch{}) {
		return Channel{}, Event{}, Invalid("send at least one field to change")
	}
	var fields []error
	if p.Name != nil {
		before := c.Name
		fields = append(fields, normalizeChannelName(&c.Name, *p.Name))
		if c.Name != before && (before == GuestChannel || c.Name == GuestChannel) {
			fields = append(fields, Invalid("the %q channel is the guests' waiting room: it keeps its name and no channel takes it", GuestChannel))
		}
	}
	if p.DisplayTitle != nil {
		fields = append(fields, normalizeChannelTitle(&c.DisplayTitle, *p.DisplayTitle))
	}
	if p.Kind != nil {
		fields = append(fields, normalizeChannelKind(&c.Kind, *p.Kind))
	}
	if p.ExternalRef != nil {
		fields = append(fields, normalizeExternalRef(&c.ExternalRef, *p.ExternalRef))
	}
	if p.ExternalURL != nil {
		fields = append(fields, normalizeExternalURL(&c.ExternalURL, *p.ExternalURL))
	}
	if p.SidebarSection != nil {
		fields = append(fields, normalizeSidebarSection(&c.SidebarSection, *p.SidebarSection))
	}
	if err := firstError(fields); err != nil {
		return Channel{}, Event{}, err
	}
	if p.Visibility != nil {
		var v string
		if err := normalizeVisibility(&v, *p.Visibility); err != nil {
			return Channel{}, Event{}, err
		}
		if v != c.Visibility {
			return Channel{}, Event{}, Invalid("visibility is fixed when a channel is created; create a new %s channel instead", v)
		}
	}
	if p.ExternalManaged != nil {
		c.ExternalManaged = *p.ExternalManaged
	}
	if p.Archived != nil {
		switch {
		case !*p.Archived:
			c.ArchivedAt = nil
		case c.ArchivedAt == nil:
			now := tx.now
			c.ArchivedAt = &now
		}
	}
	c, err = scanChannel(tx.queryRow(ctx, `
		UPDATE channels SET name = $3, display_title = nullif($4, ''), kind = $5, archived_at = $6,
			external_managed = $7, external_ref = nullif($8, ''), external_url = nullif($9, ''),
			sidebar_section = nullif($10, ''), updated_at = $11
		WHERE workspace_id = $1 AND id = $2
		RETURNING `+channelColumns,
		c.WorkspaceID, c.ID, c.Name, c.DisplayTitle, c.Kind, c.ArchivedAt, c.ExternalManaged, c.ExternalRef,
		c.ExternalURL, c.SidebarSection, tx.now))
	if err != nil {
		return Channel{}, Event{}, err
	}
	ev, err := tx.EventAppend(ctx, channelEvent("channel.updated", c, actor.UserID))
	return c, ev, err
}

// normalizeChannelName slugifies a channel name (a leading # is dropped). Codes: invalid_request.
func normalizeChannelName(dst *string, raw string) error {
	name := Slugify(strings.TrimPrefix(strings.TrimSpace(raw), "#"))
	if name == "" {
		return Invalid("name must contain a letter or digit")
	}
	*dst = name
	return nil
}

// normalizeChannelTitle trims display_title and bounds it; "" means none. Codes: invalid_request.
func normalizeChannelTitle(dst *string, raw string) error {
	return normalizeLabel(dst, raw, "display_title", MaxChannelTitleLength)
}

// normalizeLabel trims a free-text field and bounds it to max Unicode characters; "" means none.
// Codes: invalid_request.
func normalizeLabel(dst *string, raw, field string, max int) error {
	s := strings.TrimSpace(raw)
	if utf8.RuneCountInString(s) > max {
		return Invalid("%s must be at most %d characters", field, max)
	}
	*dst = s
	return nil
}

// normalizeChannelKind accepts a lowercase word of letters, digits, _ and - (1 to 32). The kind
// is a label: it changes neither visibility nor authorization. Codes: invalid_request.
func normalizeChannelKind(dst *string, raw string) error {
	kind := strings.ToLower(strings.TrimSpace(raw))
	ok := kind != "" && len(kind) <= 32
	for _, r := range kind {
		ok = ok && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}
	if !ok {
		return Invalid("kind must be 1 to 32 letters, digits, _ or -, such as %q", DefaultChannelKind)
	}
	*dst = kind
	return nil
}

// normalizeVisibility accepts public (also for "") or private. Codes: invalid_request.
func normalizeVisibility(dst *string, raw string) error {
	switch v := strings.ToLower(strings.TrimSpace(raw)); v {
	case "", VisibilityPublic:
		*dst = VisibilityPublic
	case VisibilityPrivate:
		*dst = VisibilityPrivate
	default:
		return Invalid("visibility must be %q or %q", VisibilityPublic, VisibilityPrivate)
	}
	return nil
}

// normalizeExternalRef keeps an opaque reference as sent, bounded; "" means none.
// Codes: invalid_request.
func normalizeExternalRef(dst *string, raw string) error {
	if len(raw) > MaxExternalRefLength {
		return Invalid("external_ref must be at most %d bytes", MaxExternalRefLength)
	}
	*dst = raw
	return nil
}

// normalizeExternalURL accepts "" or an absolute http(s) URL. Codes: invalid_request.
func normalizeExternalURL(dst *string, raw string) error {
	u := strings.TrimSpace(raw)
	if u != "" && (!IsWebURL(u) || len(u) > MaxExternalURLLength) {
		return Invalid("external_url must be an http or https URL")
	}
	*dst = u
	return nil
}

// normalizeSidebarSection trims a sidebar label and bounds it; "" means none.
// Codes: invalid_request.
func normalizeSidebarSection(dst *string, raw string) error {
	return normalizeLabel(dst, raw, "sidebar_section", MaxSidebarSectionLength)
}

// firstError returns the first non-nil error.
func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
