package persist

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// Channel visibilities. A channel is public unless created private, and keeps its visibility
// for life: an event's subject and every cached member set stay right.
const (
	// VisibilityPublic channels are read by every member of the workspace (guests aside).
	VisibilityPublic = "public"
	// VisibilityPrivate channels are read only by their members (channel_members).
	VisibilityPrivate = "private"
)

// channelHidden is the one SQL form of the private-channel rule: true when the channel whose id
// is the expression channelID is private and the user userID (an expression too) is not in it.
// Every query that lists what a person may read (channels, push, uploads) adds
// "NOT channelHidden(…)", and search its set form, channelsHidden; the single-channel guard
// (channelFor) and the event rule (VisibilityFacts.Visible) say the same in Go.
func channelHidden(channelID, userID string) string {
	return `EXISTS (SELECT 1 FROM channels hc WHERE hc.id = ` + channelID + ` AND hc.visibility = 'private'
		AND NOT EXISTS (SELECT 1 FROM channel_members hm WHERE hm.channel_id = hc.id AND hm.user_id = ` + userID + `))`
}

// channelReadable is channelHidden's rule, negated, for a channel whose row is already in the
// query (alias c): no second look-up of the channel, so a listing of a workspace's channels reads
// no other workspace's rows.
func channelReadable(c, userID string) string {
	return `(` + c + `.visibility <> 'private' OR EXISTS (SELECT 1 FROM channel_members hm WHERE hm.channel_id = ` + c + `.id
		AND hm.user_id = ` + userID + `))`
}

// channelsHidden is channelHidden as a set, for a query that tests many rows of one workspace
// against it (search): the private channels of workspace workspaceID (an expression) that user
// userID is not in, read once per statement rather than once per row.
func channelsHidden(workspaceID, userID string) string {
	return `SELECT hc.id FROM channels hc WHERE hc.workspace_id = ` + workspaceID + ` AND hc.visibility = 'private'
		AND NOT EXISTS (SELECT 1 FROM channel_members hm WHERE hm.channel_id = hc.id AND hm.user_id = ` + userID + `)`
}

// channelMemberIs reports whether userID is in channel channelID's member list.
func (tx *Reader) channelMemberIs(ctx context.Context, channelID, userID string) (bool, error) {
	var in bool
	err := tx.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM channel_members WHERE channel_id = $1 AND user_id = $2)`,
		channelID, userID).Scan(&in)
	return in, err
}

// PrivateChannelMembers returns, for the private channels of workspaceID among channelIDs (repeats,
// public and unknown ids are fine), their member ids. Public channels are absent from the map.
func (tx *Reader) PrivateChannelMembers(ctx context.Context, workspaceID string, channelIDs []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(channelIDs) == 0 {
		return out, nil
	}
	rows, err := tx.query(ctx, `SELECT c.id, coalesce(array_agg(m.user_id ORDER BY m.user_id) FILTER (WHERE m.user_id IS NOT NULL), '{}')
		FROM channels c LEFT JOIN channel_members m ON m.channel_id = c.id
		WHERE c.workspace_id = $1 AND c.id = ANY($2) AND c.visibility = 'private'
		GROUP BY c.id`, workspaceID, channelIDs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var members []string
		if err := rows.Scan(&id, &members); err != nil {
			return nil, err
		}
		out[id] = members
	}
	return out, rows.Err()
}

// PrivateChannelsAmong returns which of channelIDs (of workspaceID) are private.
func (tx *Reader) PrivateChannelsAmong(ctx context.Context, workspaceID string, channelIDs []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(channelIDs) == 0 {
		return out, nil
	}
	rows, err := tx.query(ctx, `SELECT id FROM channels WHERE workspace_id = $1 AND id = ANY($2) AND visibility = 'private'`,
		workspaceID, channelIDs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}

// privateChannelsOf lists the private channels of workspaceID that userID is in, sorted.
func (tx *Reader) privateChannelsOf(ctx context.Context, workspaceID, userID string) ([]string, error) {
	rows, err := tx.query(ctx, `SELECT channel_id FROM channel_members WHERE workspace_id = $1 AND user_id = $2
		ORDER BY channel_id`, workspaceID, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// ChannelMemberList is a page of a channel's members, in the order they joined the workspace, in
// the directory's shape: a private channel's member list (seen only by its members), or the
// people and bots of the workspace who have not left a public one (guests aside).
// Codes: not_found (channel, or one the actor cannot read), invalid_request (limit, cursor).
func (tx *Tx) ChannelMemberList(ctx context.Context, actor Actor, channelID string, p MemberListParams) (MemberPage[DirectoryMember], error) {
	c, _, err := tx.channelFor(ctx, actor, channelID, false)
	if err != nil {
		return MemberPage[DirectoryMember]{}, err
	}
	p.channelID, p.channelPublic = c.ID, c.Visibility != VisibilityPrivate
	page, err := tx.memberPage(ctx, c.WorkspaceID, p)
	return mapMembers(page, MemberEntry.Directory), err
}

// ChannelMemberChange is what adding or removing a channel member did.
type ChannelMemberChange struct {
	Channel Channel         `json:"channel"`
	Member  DirectoryMember `json:"member"`
}

// ChannelMemberAdd puts a member of the workspace (a person who is not a waiting-room guest, or a
// bot) into a private channel and appends channel.member_added; into a public channel it brings
// back someone who left it (no event). The actor must be in the channel
// and able to change it (not archived, neither timed out nor blocked). Adding someone already in
// is answered with their entry and no event (created is false).
// Codes: not_found (channel; user not in the workspace), invalid_request (a guest), forbidden.
func (tx *Tx) ChannelMemberAdd(ctx context.Context, actor Actor, channelID, userID string) (ChannelMemberChange, Event, bool, error) {
	c, _, err := tx.ChannelForChange(ctx, actor, channelID)
	if err != nil {
		return ChannelMemberChange{}, Event{}, false, err
	}
	target, err := tx.memberEntry(ctx, c.WorkspaceID, strings.TrimSpace(userID))
	if err != nil || target.User.DeletedAt != nil {
		return ChannelMemberChange{}, Event{}, false, NotFound("member")
	}
	if target.Role == RoleGuest {
		return ChannelMemberChange{}, Event{}, false, Invalid("guests in the waiting room cannot join channels")
	}
	if c.Visibility != VisibilityPrivate {
		// Everyone is in a public channel but those who left it: adding one of them brings them
		// back (as joining would), with no event: the channel's readers do not change.
		tag, err := tx.exec(ctx, `UPDATE channel_person_states SET left_at = NULL
			WHERE channel_id = $1 AND user_id = $2 AND left_at IS NOT NULL`, c.ID, target.UserID)
		if err != nil {
			return ChannelMemberChange{}, Event{}, false, err
		}
		if err := tx.channelStateTidy(ctx, c.ID, target.UserID); err != nil {
			return ChannelMemberChange{}, Event{}, false, err
		}
		return ChannelMemberChange{Channel: c, Member: target.Directory()}, Event{}, tag.RowsAffected() > 0, nil
	}
	tag, err := tx.exec(ctx, `INSERT INTO channel_members (channel_id, user_id, workspace_id, added_by, added_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (channel_id, user_id) DO NOTHING`,
		c.ID, target.UserID, c.WorkspaceID, actor.UserID, tx.now)
	if err != nil {
		return ChannelMemberChange{}, Event{}, false, err
	}
	out := ChannelMemberChange{Channel: c, Member: target.Directory()}
	if tag.RowsAffected() == 0 {
		return out, Event{}, false, nil
	}
	tx.noteMembershipChanged(c.WorkspaceID, target.UserID) // a bot's NATS permissions grow
	ev, err := tx.EventAppend(ctx, channelMemberEvent("channel.member_added", out, actor.UserID))
	return out, ev, true, err
}

// ChannelMemberRemove takes userID out of a private channel and appends channel.member_removed:
// anyone in it may leave; the workspace's owner and moderators (people, not bots) may remove
// others, a moderator neither the owner nor another moderator. Their open sockets and bot
// connections stop receiving the channel at once. Codes: not_found (channel, or a person not in
// it), invalid_request (public channel), forbidden.
func (tx *Tx) ChannelMemberRemove(ctx context.Context, actor Actor, channelID, userID string) (ChannelMemberChange, Event, error) {
	c, err := scanChannel(tx.queryRow(ctx, channelSelect+` FOR UPDATE`, channelID))
	if err != nil {
		return ChannelMemberChange{}, Event{}, notFoundAs(err, "channel")
	}
	m, err := tx.requireMember(ctx, c.WorkspaceID, actor)
	if err != nil {
		return ChannelMemberChange{}, Event{}, err
	}
	self := userID == actor.UserID
	moderating := !self && !actor.IsBotToken() && actor.Kind != KindBot && requireManager(m) == nil
	in, err := tx.channelMemberIs(ctx, c.ID, actor.UserID)
	if err != nil {
		return ChannelMemberChange{}, Event{}, err
	}
	if m.Role == RoleGuest && c.Name != GuestChannel {
		return ChannelMemberChange{}, Event{}, NotFound("channel")
	}
	if c.Visibility != VisibilityPrivate {
		return ChannelMemberChange{}, Event{}, Invalid("this channel is public: nobody can be removed from it")
	}
	if !in && !moderating {
		return ChannelMemberChange{}, Event{}, NotFound("channel")
	}
	if !self && !moderating {
		return ChannelMemberChange{}, Event{}, Forbidden("only the workspace's owner and moderators remove others from a channel; anyone may leave")
	}
	target, err := tx.memberEntry(ctx, c.WorkspaceID, userID)
	if err != nil {
		return ChannelMemberChange{}, Event{}, NotFound("channel member")
	}
	if moderating && m.Role == RoleModerator && (target.Role == RoleOwner || target.Role == RoleModerator) {
		return ChannelMemberChange{}, Event{}, Forbidden("moderators cannot act on the owner or other moderators")
	}
	tag, err := tx.exec(ctx, `DELETE FROM channel_members WHERE channel_id = $1 AND user_id = $2`, c.ID, target.UserID)
	if err != nil {
		return ChannelMemberChange{}, Event{}, err
	}
	if tag.RowsAffected() == 0 {
		return ChannelMemberChange{}, Event{}, NotFound("channel member")
	}
	tx.noteMembershipChanged(c.WorkspaceID, target.UserID) // a bot's NATS permissions shrink
	out := ChannelMemberChange{Channel: c, Member: target.Directory()}
	ev, err := tx.EventAppend(ctx, channelMemberEvent("channel.member_removed", out, actor.UserID))
	return out, ev, err
}

// channelMembersLeave takes the listed users out of every private channel of the workspace, as
// they leave it: coming back does not bring the channels back (and puts them in every public one).
func (tx *Tx) channelMembersLeave(ctx context.Context, workspaceID string, userIDs []string) error {
	if _, err := tx.exec(ctx, `DELETE FROM channel_members WHERE workspace_id = $1 AND user_id = ANY($2)`, workspaceID, userIDs); err != nil {
		return err
	}
	return tx.channelStatesForget(ctx, workspaceID, userIDs)
}

// channelMemberEvent is channel.member_added or channel.member_removed: the channel, and the
// member the event is about (user_id), whom the visibility rule lets see it besides the members.
func channelMemberEvent(typ string, ch ChannelMemberChange, actorID string) EventInput {
	return EventInput{WorkspaceID: ch.Channel.WorkspaceID, Type: typ, ChannelID: ch.Channel.ID, ActorID: actorID,
		Payload: map[string]any{"channel_id": ch.Channel.ID, "user_id": ch.Member.User.ID, "channel": ch.Channel,
			"member": ch.Member}}
}

// memberID is the person a channel membership event is about, read from its payload; "" for
// other events.
func (e Event) memberID() string {
	if e.Type != "channel.member_added" && e.Type != "channel.member_removed" {
		return ""
	}
	var p struct {
		UserID string `json:"user_id"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	return p.UserID
}

// PrivateChannelSummary is what the moderation view shows of a private channel: that it exists,
// never what is said in it.
type PrivateChannelSummary struct {
	ID          string     `json:"id"`
	RouteID     string     `json:"route_id"`
	Name        string     `json:"name"`
	Visibility  string     `json:"visibility"`
	MemberCount int        `json:"member_count"`
	Archived    bool       `json:"archived"`
	ArchivedAt  *time.Time `json:"archived_at,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
}

// ModerationChannelList lists every private channel of the workspace, with its member count,
// for its owner and moderators (people), who may archive one without reading it.
// Codes: not_found (workspace), forbidden.
func (tx *Tx) ModerationChannelList(ctx context.Context, actor Actor, workspaceID string) ([]PrivateChannelSummary, error) {
	if actor.IsBotToken() || actor.Kind == KindBot {
		return nil, Forbidden("bot tokens cannot use the moderation view")
	}
	m, err := tx.requireMemberToRead(ctx, workspaceID, actor)
	if err != nil {
		return nil, err
	}
	if err := requireManager(m); err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, `SELECT c.id, c.route_id, c.name, c.archived_at, c.created_at,
			(SELECT count(*) FROM channel_members cm WHERE cm.channel_id = c.id)
		FROM channels c WHERE c.workspace_id = $1 AND c.visibility = 'private' ORDER BY c.name`, workspaceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []PrivateChannelSummary{}
	for rows.Next() {
		s := PrivateChannelSummary{Visibility: VisibilityPrivate}
		if err := rows.Scan(&s.ID, &s.RouteID, &s.Name, &s.ArchivedAt, &s.CreatedAt, &s.MemberCount); err != nil {
			return nil, err
		}
		s.Archived = s.ArchivedAt != nil
		out = append(out, s)
	}
	return out, rows.Err()
}
