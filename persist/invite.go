package persist

import (
	"context"
	"time"
)

// Invite token and id prefixes.
const (
	PrefixInvite      = "inv_"
	PrefixInviteToken = "ivt_"
)

// Invite lifetimes.
const (
	// InviteDefaultLifetime is how long an invite lives when the request names no lifetime.
	InviteDefaultLifetime = 7 * 24 * time.Hour
	// InviteMaxLifetime is the longest lifetime an invite may have.
	InviteMaxLifetime = 30 * 24 * time.Hour
)

// Invite is a single-use invitation to a workspace. Token, the raw secret, is set only in the
// result of InviteCreate; the database keeps its SHA-256.
type Invite struct {
	ID          string    `json:"id"`
	WorkspaceID string    `json:"workspace_id"`
	Token       string    `json:"token,omitempty"`
	Role        string    `json:"role"`
	CreatedBy   string    `json:"created_by"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// InviteCreate mints an invite to join as role (default member) that expires after
// expiresInHours (0: InviteDefaultLifetime; at most InviteMaxLifetime). The owner may invite members, guests and moderators; moderators
// invite members and guests. Codes: invalid_request (role, lifetime), not_found, forbidden.
func (tx *Tx) InviteCreate(ctx context.Context, actor Actor, workspaceID, role string, expiresInHours int) (Invite, error) {
	m, err := tx.requireMember(ctx, workspaceID, actor)
	if err != nil {
		return Invite{}, err
	}
	if err := tx.requireManagerWriter(ctx, m); err != nil {
		return Invite{}, err
	}
	switch role {
	case "":
		role = RoleMember
	case RoleMember, RoleGuest:
	case RoleModerator:
		if m.Role != RoleOwner {
			return Invite{}, Forbidden("only the workspace owner appoints moderators")
		}
	default:
		return Invite{}, Invalid("role must be member, moderator or guest")
	}
	lifetime := InviteDefaultLifetime
	if maxHours := int(InviteMaxLifetime / time.Hour); expiresInHours != 0 {
		if expiresInHours < 1 || expiresInHours > maxHours {
			return Invite{}, Invalid("expires_in_hours must be between 1 and %d", maxHours)
		}
		lifetime = time.Duration(expiresInHours) * time.Hour
	}
	raw, hash := NewSecret(PrefixInviteToken)
	inv := Invite{ID: NewID(PrefixInvite, tx.now), WorkspaceID: workspaceID, Token: raw, Role: role,
		CreatedBy: actor.UserID, CreatedAt: tx.now, ExpiresAt: tx.now.Add(lifetime)}
	_, err = tx.exec(ctx, `INSERT INTO workspace_invites (id, workspace_id, token_hash, role, created_by, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, inv.ID, workspaceID, hash, role, actor.UserID, inv.CreatedAt, inv.ExpiresAt)
	return inv, err
}

// InviteAccept lets the actor (a human) into the invite's workspace with its role and spends the
// invite. Unknown, spent and expired tokens are one and the same 404. Someone who already
// belongs keeps their membership and leaves the invite unspent. The inviter must still be allowed
// to mint the invite now (inviterStanding), and a newcomer removed while blocked comes back
// blocked (MemberAdd). Codes: not_found (invite), forbidden (the inviter's standing),
// invalid_request (a bot).
func (tx *Tx) InviteAccept(ctx context.Context, actor Actor, token string) (Workspace, MemberEntry, error) {
	var inv Invite
	err := tx.queryRow(ctx, `SELECT id, workspace_id, role, created_by FROM workspace_invites
		WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 FOR UPDATE`,
		HashSecret(token), tx.now).Scan(&inv.ID, &inv.WorkspaceID, &inv.Role, &inv.CreatedBy)
	if err != nil {
		return Workspace{}, MemberEntry{}, notFoundAs(err, "invite")
	}
	if _, err := tx.MemberGet(ctx, inv.WorkspaceID, actor.UserID); err != nil {
		if e, ok := ErrorOf(err); !ok || e.Code != CodeNotFound {
			return Workspace{}, MemberEntry{}, err
		}
		if err := tx.inviterStanding(ctx, inv.WorkspaceID, inv.CreatedBy, inv.Role); err != nil {
			return Workspace{}, MemberEntry{}, err
		}
		if _, err := tx.exec(ctx, `UPDATE workspace_invites SET used_at = $2, used_by = $3
			WHERE workspace_id = $1 AND id = $4`, inv.WorkspaceID, tx.now, actor.UserID, inv.ID); err != nil {
			return Workspace{}, MemberEntry{}, err
		}
		if _, err := tx.MemberJoin(ctx, inv.WorkspaceID, actor.UserID, inv.Role); err != nil {
			return Workspace{}, MemberEntry{}, err
		}
	}
	w, err := tx.WorkspaceGet(ctx, inv.WorkspaceID)
	if err != nil {
		return Workspace{}, MemberEntry{}, err
	}
	e, err := tx.memberEntry(ctx, inv.WorkspaceID, actor.UserID)
	w.Role = e.Role
	return w, e, err
}

// InviteList returns the workspace's open invites (neither used nor expired, nor revoked, which
// is expiring), newest first, for the owner and moderators. Tokens are never in it: only their
// hashes are kept. Codes: not_found, forbidden.
func (tx *Tx) InviteList(ctx context.Context, actor Actor, workspaceID string) ([]Invite, error) {
	m, err := tx.requireMember(ctx, workspaceID, actor)
	if err != nil {
		return nil, err
	}
	if err := requireManager(m); err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, `SELECT id, workspace_id, role, created_by, created_at, expires_at
		FROM workspace_invites WHERE workspace_id = $1 AND used_at IS NULL AND expires_at > $2
		ORDER BY created_at DESC, id DESC`, workspaceID, tx.now)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Invite{}
	for rows.Next() {
		var inv Invite
		if err := rows.Scan(&inv.ID, &inv.WorkspaceID, &inv.Role, &inv.CreatedBy, &inv.CreatedAt, &inv.ExpiresAt); err != nil {
			return nil, err
		}
		out = append(out, inv)
	}
	return out, rows.Err()
}

// InviteRevoke ends an open invite at once by moving its expiry to now, so the row (who invited,
// when) stays and accepting it meets the same 404 as any expired invite. The rules of
// InviteCreate apply: the owner revokes any invite, moderators those that do not appoint
// moderators. Codes: not_found (workspace, or no open invite by that id), forbidden.
func (tx *Tx) InviteRevoke(ctx context.Context, actor Actor, workspaceID, inviteID string) (Invite, error) {
	m, err := tx.requireMember(ctx, workspaceID, actor)
	if err != nil {
		return Invite{}, err
	}
	if err := tx.requireManagerWriter(ctx, m); err != nil {
		return Invite{}, err
	}
	var inv Invite
	err = tx.queryRow(ctx, `SELECT id, workspace_id, role, created_by, created_at, expires_at
		FROM workspace_invites WHERE workspace_id = $1 AND id = $2 AND used_at IS NULL AND expires_at > $3
		FOR UPDATE`, workspaceID, inviteID, tx.now).
		Scan(&inv.ID, &inv.WorkspaceID, &inv.Role, &inv.CreatedBy, &inv.CreatedAt, &inv.ExpiresAt)
	if err != nil {
		return Invite{}, notFoundAs(err, "invite")
	}
	if inv.Role == RoleModerator && m.Role != RoleOwner {
		return Invite{}, Forbidden("only the workspace owner appoints moderators")
	}
	inv.ExpiresAt = tx.now
	_, err = tx.exec(ctx, `UPDATE workspace_invites SET expires_at = $3 WHERE workspace_id = $1 AND id = $2`,
		workspaceID, inviteID, tx.now)
	return inv, err
}
