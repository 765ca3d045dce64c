package persist

import "context"

// Place is where a message lives: exactly one of ChannelID and DMID is set.
type Place struct {
	ChannelID string
	DMID      string
}

// ID is the channel or direct conversation id, the scope of read receipts.
func (p Place) ID() string {
	if p.ChannelID != "" {
		return p.ChannelID
	}
	return p.DMID
}

// placeState is what a guard learned about a place it admitted the actor to.
type placeState struct {
	Place
	WorkspaceID string
	LastSeq     int64
}

// placeAccess is what the actor wants to do in a place.
type placeAccess int

const (
	// accessRead reads the conversation.
	accessRead placeAccess = iota
	// accessChange changes shared state without posting (react, pin, edit): not archived, the
	// actor neither timed out nor blocked; no guest post is spent.
	accessChange
	// accessPost posts a message: accessChange plus one guest post spent.
	accessPost
)

// placeFor admits the actor to a channel or direct conversation through the guard that matches
// the access: ChannelForRead, ChannelForChange or ChannelForWrite for channels, and DMForRead,
// DMForChange or DMForWrite for direct conversations. Codes: those of the guards.
func (tx *Tx) placeFor(ctx context.Context, actor Actor, p Place, a placeAccess) (placeState, Member, error) {
	if p.ChannelID != "" {
		guard := tx.ChannelForRead
		switch a {
		case accessChange:
			guard = tx.ChannelForChange
		case accessPost:
			guard = tx.ChannelForWrite
		}
		c, m, err := guard(ctx, actor, p.ChannelID)
		if err != nil {
			return placeState{}, Member{}, err
		}
		return placeState{Place: p, WorkspaceID: c.WorkspaceID, LastSeq: c.LastSeq}, m, nil
	}
	guard := tx.DMForRead
	switch a {
	case accessChange:
		guard = tx.DMForChange
	case accessPost:
		guard = tx.DMForWrite
	}
	d, m, err := guard(ctx, actor, p.DMID)
	if err != nil {
		return placeState{}, Member{}, err
	}
	return placeState{Place: p, WorkspaceID: d.WorkspaceID, LastSeq: d.LastSeq}, m, nil
}
