package persist

import "context"

// What a member's standing carries beyond their own requests (issue 22): the invites and service-bot
// tokens they issued, and a block or timeout, which must neither outlive the member's standing nor
// be shed by leaving and coming back.
//
// The rule: a block or timeout suspends what the member issued, for as long as it lasts (a
// token's requests are bounded by its issuer at the time of the call, see Actor.IssuerUserID; an
// invite admits only while its inviter may invite, see inviterStanding), because both end and the
// owner expects the bots to work again afterwards. A removal revokes: the member's open invites
// expire, their pending setup codes are deleted and their service-bot tokens are revoked in the
// same transaction, because a removed member who later rejoins (as anything) must not find them
// working again.

// revokeIssued revokes what userID issued in workspaceID when their membership ends: open
// invites expire now, pending setup codes go, and live service-bot tokens are revoked (their
// sockets and NATS connections are rechecked at commit). A user bot's tokens leave with the bot
// (botLeave).
func (tx *Tx) revokeIssued(ctx context.Context, workspaceID, userID string) error {
	if _, err := tx.exec(ctx, `UPDATE workspace_invites SET expires_at = $3
		WHERE workspace_id = $1 AND created_by = $2 AND used_at IS NULL AND expires_at > $3`, workspaceID, userID, tx.now); err != nil {
		return err
	}
	if _, err := tx.exec(ctx, `DELETE FROM bot_setup_codes
		WHERE workspace_id = $1 AND created_by = $2 AND consumed_at IS NULL`, workspaceID, userID); err != nil {
		return err
	}
	rows, err := tx.query(ctx, `UPDATE bot_tokens SET revoked_at = $3
		WHERE workspace_id = $1 AND created_by = $2 AND owner_user_id IS NULL AND revoked_at IS NULL
		RETURNING id`, workspaceID, userID, tx.now)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		tx.noteRevoked(Revocation{TokenID: id})
	}
	return rows.Err()
}

// keepStanding records a leaving member's block and running timeout, so that joining again
// (invite, sign-in, operator) restores them. Nothing is kept for a member in good standing.
func (tx *Tx) keepStanding(ctx context.Context, m Member) error {
	if m.BlockedAt == nil && (m.TimeoutUntil == nil || !m.TimeoutUntil.After(tx.now)) {
		return nil
	}
	_, err := tx.exec(ctx, `INSERT INTO workspace_standing_kept
			(workspace_id, user_id, blocked_at, timeout_until, moderation_note, moderation_by, moderation_at)
		VALUES ($1, $2, $3, $4, nullif($5, ''), nullif($6, ''), $7)
		ON CONFLICT (workspace_id, user_id) DO UPDATE SET blocked_at = excluded.blocked_at,
			timeout_until = excluded.timeout_until, moderation_note = excluded.moderation_note,
			moderation_by = excluded.moderation_by, moderation_at = excluded.moderation_at`,
		m.WorkspaceID, m.UserID, m.BlockedAt, m.TimeoutUntil, m.ModerationNote, m.ModerationBy, m.ModerationAt)
	return err
}

// inviterStanding is the check of an invite at acceptance: its inviter must still be allowed to
// mint it now — a member, owner or moderator, neither blocked nor timed out, and the owner for a
// moderator invite. A moderator who was blocked, demoted or removed after minting it no longer
// lets anyone in with it. Codes: forbidden.
func (tx *Tx) inviterStanding(ctx context.Context, workspaceID, inviterID, role string) error {
	refused := Forbidden("the person who created this invite can no longer invite to this workspace")
	m, err := scanMember(tx.queryRow(ctx, memberSelect(memberShare), workspaceID, inviterID))
	if e := notFoundAs(err, "member"); e != err {
		return refused
	} else if err != nil {
		return err
	}
	if requireManager(m) != nil || tx.requireActive(m) != nil || (role == RoleModerator && m.Role != RoleOwner) {
		return refused
	}
	return nil
}
