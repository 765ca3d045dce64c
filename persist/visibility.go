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
}

// Scope returns the event's scope.
func (e Event) Scope() EventScope {
	return EventScope{ChannelID: e.ChannelID, DirectConversationID: e.DirectConversationID}
}

// VisibilityFacts are the facts of a workspace the rule consults: which channel is the guest
// channel and who belongs to the direct conversations in question. Conversation member sets never
// change (a conversation is one per member set), so readers may cache them.
type VisibilityFacts struct {
	// GuestChannelID is the channel named GuestChannel, "" when the workspace has none.
	GuestChannelID string
	// DMMembers holds the member ids of each direct conversation asked about.
	DMMembers map[string][]string
}

// Visible is the one visibility rule of CONTRACT.md §Events, applied alike by backfill, the
// WebSocket, subscriptions and NATS: an event about a direct conversation reaches only its
// members; a guest sees only the guest channel's events (and their own conversations); every
// other member sees the rest of the workspace.
func (f VisibilityFacts) Visible(v Viewer, s EventScope) bool {
	if s.DirectConversationID != "" {
		return slices.Contains(f.DMMembers[s.DirectConversationID], v.UserID)
	}
	if v.Guest {
		return s.ChannelID != "" && s.ChannelID == f.GuestChannelID
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
// direct conversations (repeats and unknown ids are fine).
func (tx *Reader) VisibilityFactsFor(ctx context.Context, workspaceID string, dmIDs []string) (VisibilityFacts, error) {
	f := VisibilityFacts{DMMembers: map[string][]string{}}
	err := tx.queryRow(ctx, `SELECT coalesce((SELECT id FROM channels WHERE workspace_id = $1 AND name = $2), '')`,
		workspaceID, GuestChannel).Scan(&f.GuestChannelID)
	if err != nil || len(dmIDs) == 0 {
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
	var dms []string
	for _, e := range events {
		if e.DirectConversationID != "" {
			dms = append(dms, e.DirectConversationID)
		}
	}
	f, err := tx.VisibilityFactsFor(ctx, v.WorkspaceID, dms)
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
