package persist

import "context"

// MemberRemoved is what a removal did: the member who left and the user bots of theirs that
// left the workspace with them.
type MemberRemoved struct {
	WorkspaceID   string   `json:"workspace_id"`
	UserID        string   `json:"user_id"`
	Role          string   `json:"role"`
	RemovedBotIDs []string `json:"removed_bot_ids"`
}

// MemberRemove takes a person out of a workspace for an owner or moderator (moderators cannot
// act on the owner or other moderators). See memberRemove for what leaves with them.
// Codes: not_found (workspace, member), forbidden, conflict (the owner).
func (tx *Tx) MemberRemove(ctx context.Context, actor Actor, workspaceID, userID string) (MemberRemoved, Event, error) {
	if err := requireHumanActor(actor); err != nil {
		return MemberRemoved{}, Event{}, err
	}
	m, err := tx.requireMember(ctx, workspaceID, actor)
	if err != nil {
		return MemberRemoved{}, Event{}, err
	}
	if err := tx.requireManagerWriter(ctx, m); err != nil {
		return MemberRemoved{}, Event{}, err
	}
	target, err := tx.memberForUpdate(ctx, workspaceID, userID)
	if err != nil {
		return MemberRemoved{}, Event{}, err
	}
	if target.Role == RoleModerator && m.Role != RoleOwner && target.UserID != actor.UserID {
		return MemberRemoved{}, Event{}, Forbidden("moderators cannot act on other moderators")
	}
	return tx.memberRemove(ctx, target, actor.UserID)
}

// MemberRemoveByOperator is MemberRemove for the operator's command line, which acts on the
// database directly: the same removal and event, without an acting member.
// Codes: not_found (member), conflict (the owner).
func (tx *Tx) MemberRemoveByOperator(ctx context.Context, workspaceID, userID string) (MemberRemoved, Event, error) {
	target, err := tx.memberForUpdate(ctx, workspaceID, userID)
	if err != nil {
		return MemberRemoved{}, Event{}, err
	}
	return tx.memberRemove(ctx, target, "")
}

// memberRemove ends target's membership: a workspace keeps its one owner, so the owner is
// refused (ownership moves by transfer first). A bot leaves as through the bots API; a person's
// user bots leave with them, their tokens there revoked, and what they issued there is revoked
// (revokeIssued) while a block or timeout is kept for their return (keepStanding). Open sockets of everyone who left are
// rechecked at commit (and closed); member.removed is the transaction's last write.
func (tx *Tx) memberRemove(ctx context.Context, target MemberEntry, actorID string) (MemberRemoved, Event, error) {
	workspaceID := target.WorkspaceID
	if target.Role == RoleOwner {
		return MemberRemoved{}, Event{}, Errorf(CodeConflict,
			"the workspace owner cannot be removed; transfer ownership to another member first")
	}
	out := MemberRemoved{WorkspaceID: workspaceID, UserID: target.UserID, Role: target.Role, RemovedBotIDs: []string{}}
	if target.User.Kind == KindBot {
		if err := tx.botLeave(ctx, workspaceID, target.UserID); err != nil {
			return MemberRemoved{}, Event{}, err
		}
	} else {
		rows, err := tx.query(ctx, `SELECT m.user_id FROM workspace_members m JOIN users u ON u.id = m.user_id
			WHERE m.workspace_id = $1 AND u.owner_user_id = $2 AND u.kind = 'bot' ORDER BY m.user_id`,
			workspaceID, target.UserID)
		if err != nil {
			return MemberRemoved{}, Event{}, err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return MemberRemoved{}, Event{}, err
			}
			out.RemovedBotIDs = append(out.RemovedBotIDs, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return MemberRemoved{}, Event{}, err
		}
		for _, id := range out.RemovedBotIDs {
			if err := tx.botLeave(ctx, workspaceID, id); err != nil {
				return MemberRemoved{}, Event{}, err
			}
		}
		if err := tx.revokeIssued(ctx, workspaceID, target.UserID); err != nil {
			return MemberRemoved{}, Event{}, err
		}
		if err := tx.keepStanding(ctx, target.Member); err != nil {
			return MemberRemoved{}, Event{}, err
		}
		if err := tx.channelMembersLeave(ctx, workspaceID, []string{target.UserID}); err != nil {
			return MemberRemoved{}, Event{}, err
		}
		if _, err := tx.exec(ctx, `DELETE FROM workspace_members WHERE workspace_id = $1 AND user_id = $2`,
			workspaceID, target.UserID); err != nil {
			return MemberRemoved{}, Event{}, err
		}
		tx.noteMembershipChanged(workspaceID, target.UserID)
	}
	ev, err := tx.EventAppend(ctx, memberRemovedEvent(actorID, out))
	return out, ev, err
}

// MemberSetRoleByOperator changes a person's role for the operator's command line (member add
// --update): member, moderator or guest; the owner's role moves only by transfer. A new guest
// finds the guest channel ready. Emits member.moderation_updated like a moderator's change.
// Codes: invalid_request (role), not_found (member), conflict (the owner, a bot).
func (tx *Tx) MemberSetRoleByOperator(ctx context.Context, workspaceID, userID, role string) (Member, Event, error) {
	if role != RoleMember && role != RoleModerator && role != RoleGuest {
		return Member{}, Event{}, Invalid("role must be member, moderator or guest")
	}
	target, err := tx.memberForUpdate(ctx, workspaceID, userID)
	if err != nil {
		return Member{}, Event{}, err
	}
	switch {
	case target.Role == RoleOwner:
		return Member{}, Event{}, Errorf(CodeConflict, "the owner's role changes only by ownership transfer")
	case target.User.Kind != KindHuman:
		return Member{}, Event{}, Errorf(CodeConflict, "a bot keeps the bot role")
	case target.Role == role:
		return target.Member, Event{}, nil
	}
	updated, err := scanMember(tx.queryRow(ctx, `UPDATE workspace_members SET role = $3, moderation_at = $4
		WHERE workspace_id = $1 AND user_id = $2 RETURNING `+memberColumns, workspaceID, userID, role, tx.now))
	if err != nil {
		return Member{}, Event{}, err
	}
	tx.noteMembershipChanged(workspaceID, userID)
	if role == RoleGuest {
		if _, err := tx.guestChannelEnsure(ctx, workspaceID, userID); err != nil {
			return Member{}, Event{}, err
		}
		if err := tx.channelStatesForget(ctx, workspaceID, []string{userID}); err != nil {
			return Member{}, Event{}, err
		}
	}
	target.Member = updated
	ev, err := tx.EventAppend(ctx, memberModerationEvent(workspaceID, "", target.Moderated(tx.now)))
	return updated, ev, err
}
