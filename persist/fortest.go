package persist

import (
	"context"
	"time"
)

// ChannelArchiveForTest sets or clears a channel's archived_at directly, without the rules and
// event of the channel API. Only test factories call it.
func (tx *Tx) ChannelArchiveForTest(ctx context.Context, channelID string, archived bool) error {
	var at *time.Time
	if archived {
		at = &tx.now
	}
	_, err := tx.exec(ctx, `UPDATE channels SET archived_at = $2 WHERE id = $1`, channelID, at)
	return err
}

// MemberRestrictForTest sets a member's timeout and block directly, without the rules and event
// of the moderation API. Only test factories call it.
func (tx *Tx) MemberRestrictForTest(ctx context.Context, workspaceID, userID string, timeoutUntil, blockedAt *time.Time) error {
	_, err := tx.exec(ctx, `UPDATE workspace_members SET timeout_until = $3, blocked_at = $4
		WHERE workspace_id = $1 AND user_id = $2`, workspaceID, userID, timeoutUntil, blockedAt)
	return err
}
