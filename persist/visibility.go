package persist

import (
	"context"
	"slices"
)

// Viewer is a reader of a workspace's event log as the visibility rule sees it.
type Viewer struct {
	WorkspaceID string
	UserID      string
	// Guest is true for waiting-room guests, who see only the guest channel and their own
	// direct conversations.
	Guest bool
}

// EventScope is where an event happened: a channel, a direct conversation, or neither
// (workspace-wide). The relay encodes it in the stream subject, so live readers need not
// decode the envelope.
type EventScope struct {
	ChannelID            string
	DirectConversationID string
	// PrivateChannel is true when ChannelID is a private channel (its own subject, .pch.): read
	// only by its members even when the facts at hand do not know the channel.
	PrivateChannel bool
	// MemberID is the person a channel.member_added or channel.member_removed event is about,
	// who sees it though they are not (or no longer) a member.
	MemberID string
}

// Scope returns the event's scope.
func (e Event) Scope() EventScope {
	return EventScope{ChannelID: e.ChannelID, DirectConversationID: e.DirectConversationID,
		PrivateChannel: e.PrivateChannel, MemberID: e.memberID()}
}

// VisibilityFacts are the facts of a workspace the rule consults: which channel is the guest
// channel, who belongs to the direct conversations in question, and who belongs to the private
// channels in question. Conversation member sets never change (a conversation is one per member
// set), so readers may cache them; a private channel's change only through channel.member_added
// and channel.member_removed, which readers that cache them follow.
type VisibilityFacts struct {
	// GuestChannelID is the channel named GuestChannel, "" when the workspace has none.
	GuestChannelID string
	// DMMembers holds the member ids of each direct conversation asked about.
	DMMembers map[string][]string
	// PrivateMembers holds the member ids of each private channel asked about; a channel
	// missing here is public unless the scope says otherwise.
	PrivateMembers map[string][]string
}

// Visible is the one visibility rule of CONTRACT.md §Events, applied alike by backfill, the
// WebSocket, subscriptions and NATS: an event about a direct conversation reaches only its
// members; a guest sees only the guest channel's events (and their own conversations); an event
// of a private channel reaches only its members (and the person a membership event is about);
// every other member sees the rest of the workspace.
func (f VisibilityFacts) Visible(v Viewer, s EventScope) bool {
	if s.DirectConversationID != "" {
		return slices.Contains(f.DMMembers[s.DirectConversationID], v.UserID)
	}
	if v.Guest {
		return s.ChannelID != "" && s.ChannelID == f.GuestChannelID
	}
	if members, private := f.PrivateMembers[s.ChannelID]; s.ChannelID != "" && (private || s.PrivateChannel) {
		return slices.Contains(members, v.UserID) || (s.MemberID != "" && s.MemberID == v.UserID)
	}
	return true
}

// ViewerFor checks that actor may read workspaceID's events right now (membership, the token's
// workspace, a user bot's owner) and returns it as a Viewer. Sockets call it before upgrading and
// again whenever they revalidate. Codes: not_found (workspace), forbidden.
func (tx *Reader) ViewerFor(ctx context.Context, actor Actor, workspaceID string) (Viewer, error) {
	m, err := tx.requireMemberToRead(ctx, workspaceID, actor)
	if err != nil {
		return Viewer{}, err
	}
	return Viewer{WorkspaceID: workspaceID, UserID: actor.UserID, Guest: m.Role == RoleGuest}, nil
}

// VisibilityFactsFor reads the facts of workspaceID the rule needs for events in the listed
// direct conversations and channels (repeats and unknown ids are fine; only the private ones
// among the channels come back, in PrivateMembers).
func (tx *Reader) VisibilityFactsFor(ctx context.Context, workspaceID string, dmIDs, channelIDs []string) (VisibilityFacts, error) {
	f := VisibilityFacts{DMMembers: map[string][]string{}}
	err := tx.queryRow(ctx, `SELECT coalesce((SELECT id FROM channels WHERE workspace_id = $1 AND name = $2), '')`,
		workspaceID, GuestChannel).Scan(&f.GuestChannelID)
	if err != nil {
		return f, err
	}
	if f.PrivateMembers, err = tx.PrivateChannelMembers(ctx, workspaceID, channelIDs); err != nil || len(dmIDs) == 0 {
		return f, err
	}
	for _, id := range dmIDs {
		f.DMMembers[id] = []string{} // known to have no other members than those found below
	}
	rows, err := tx.query(ctx, `SELECT dm_id, user_id FROM dm_members WHERE workspace_id = $1 AND dm_id = ANY($2)`,
		workspaceID, dmIDs)
	if err != nil {
		return f, err
	}
	defer rows.Close()
	for rows.Next() {
		var dm, user string
		if err := rows.Scan(&dm, &user); err != nil {
			return f, err
		}
		f.DMMembers[dm] = append(f.DMMembers[dm], user)
	}
	return f, rows.Err()
}

// visibleOf filters events by the rule, reading the facts they need in one round trip.
func (tx *Tx) visibleOf(ctx context.Context, v Viewer, events []Event) ([]Event, error) {
	var dms, channels []string
	for _, e := range events {
		if e.DirectConversationID != "" {
			dms = append(dms, e.DirectConversationID)
		}
		if e.ChannelID != "" && !v.Guest {
			channels = append(channels, e.ChannelID)
		}
	}
	f, err := tx.VisibilityFactsFor(ctx, v.WorkspaceID, dms, channels)
	if err != nil {
		return nil, err
	}
	out := events[:0:0]
	for _, e := range events {
		if f.Visible(v, e.Scope()) {
			out = append(out, e)
		}
	}
	return out, nil
}
