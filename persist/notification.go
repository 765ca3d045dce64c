package persist

import (
	"context"
	"time"
)

// Notification levels of a channel: what pushes a member gets about its messages.
const (
	NotifyAll      = "all"      // every message
	NotifyMentions = "mentions" // messages that @mention the member's handle
	NotifyMuted    = "muted"    // nothing
)

// DefaultChannelNotify is the level of a channel whose member set none: mentions only, so a
// busy channel does not buzz every phone in the workspace. Direct conversations always notify
// (NotifyAll).
const DefaultChannelNotify = NotifyMentions

// NotificationPreference is a member's notification level for one channel. UpdatedAt is absent
// while the default applies.
type NotificationPreference struct {
	ChannelID string     `json:"channel_id"`
	Level     string     `json:"level"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
}

// NotificationPreferenceGet returns the actor's level for a channel they can read.
// Codes: not_found (channel, or one a guest cannot see), forbidden (not a member).
func (tx *Tx) NotificationPreferenceGet(ctx context.Context, actor Actor, channelID string) (NotificationPreference, error) {
	c, _, err := tx.ChannelForRead(ctx, actor, channelID)
	if err != nil {
		return NotificationPreference{}, err
	}
	p := NotificationPreference{ChannelID: c.ID, Level: DefaultChannelNotify}
	err = tx.queryRow(ctx, `SELECT level, updated_at FROM channel_notification_preferences
		WHERE workspace_id = $1 AND channel_id = $2 AND user_id = $3`, c.WorkspaceID, c.ID, actor.UserID).Scan(&p.Level, &p.UpdatedAt)
	if e := notFoundAs(err, "preference"); e != err {
		return p, nil
	}
	return p, err
}

// NotificationPreferenceSet sets the actor's level for a channel they can read (archived
// channels included: it is their own setting, not the channel's). Codes: invalid_request
// (level), those of NotificationPreferenceGet.
func (tx *Tx) NotificationPreferenceSet(ctx context.Context, actor Actor, channelID, level string) (NotificationPreference, error) {
	switch level {
	case NotifyAll, NotifyMentions, NotifyMuted:
	default:
		return NotificationPreference{}, Invalid("level must be all, mentions or muted")
	}
	c, _, err := tx.ChannelForRead(ctx, actor, channelID)
	if err != nil {
		return NotificationPreference{}, err
	}
	p := NotificationPreference{ChannelID: c.ID, Level: level, UpdatedAt: &tx.now}
	_, err = tx.exec(ctx, `INSERT INTO channel_notification_preferences (workspace_id, channel_id, user_id, level, updated_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (channel_id, user_id) DO UPDATE SET level = EXCLUDED.level, updated_at = EXCLUDED.updated_at`,
		c.WorkspaceID, c.ID, actor.UserID, level, tx.now)
	return p, err
}

// PushSelects is the recipient rule of web push: with level all, every message; with mentions,
// a message that addresses the reader (Addresses: @handle, @channel, @everyone, and @here while
// online); muted, nothing.
func PushSelects(level, body, handle string, online bool) bool {
	switch level {
	case NotifyAll:
		return true
	case NotifyMentions:
		return Addresses(body, handle, online)
	}
	return false
}
