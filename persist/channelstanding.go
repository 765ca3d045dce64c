package persist

import (
	"context"
	"encoding/json"
)

// ChannelStandingUpdated is the event that tells a person's own sockets their standing in a
// channel changed: they joined, left, starred, unstarred or muted it (docs/realtime.md, "A
// person's own events"). It is delivered live to that person's sockets only, never stored, and
// carries {channel, user_id}: the channel as their channel list shows it (joined, starred,
// notification_level), so their other tabs follow without a reload.
const ChannelStandingUpdated = "channel.standing_updated"

// ChannelStandingEvent is the ChannelStandingUpdated of the actor's standing in channelID as it
// is now, for a handler to publish after the change's commit. It reads in the change's
// transaction, which checked that the actor may read the channel: a private channel they just
// left reads as not joined. Codes: not_found.
func (tx *Tx) ChannelStandingEvent(ctx context.Context, actor Actor, channelID string) (Event, error) {
	c, err := scanChannel(tx.queryRow(ctx, `SELECT `+channelColumns+` FROM channels WHERE id = $1`, channelID))
	if err != nil {
		return Event{}, notFoundAs(err, "channel")
	}
	c, err = tx.channelStanding(ctx, c, actor.UserID)
	if err != nil {
		return Event{}, err
	}
	if c.Visibility == VisibilityPrivate {
		in, err := tx.channelMemberIs(ctx, c.ID, actor.UserID)
		if err != nil {
			return Event{}, err
		}
		c.Joined = &in
	}
	payload, err := json.Marshal(map[string]any{"channel": c, "user_id": actor.UserID})
	if err != nil {
		return Event{}, err
	}
	return Event{ID: NewID(PrefixEvent, tx.now), Type: ChannelStandingUpdated, WorkspaceID: c.WorkspaceID,
		ChannelID: c.ID, PrivateChannel: c.Visibility == VisibilityPrivate, ActorID: actor.UserID,
		CreatedAt: tx.now, Payload: payload}, nil
}
