package persist

import "context"

// The operator's command line acts on the database directly, with no acting member: these are
// its reads. The writes it shares with the API (member removal, role change) sit beside them.

// WorkspaceSummary is a workspace as the operator lists it: with its owner and member count.
type WorkspaceSummary struct {
	// Workspace is a field, not embedded: its MarshalJSON would replace the summary's.
	Workspace   Workspace `json:"workspace"`
	OwnerID     string    `json:"owner_user_id"`
	OwnerEmail  string    `json:"owner_email"`
	MemberCount int       `json:"member_count"`
}

// WorkspaceListAll returns every workspace, oldest first, with its owner and member count.
func (tx *Tx) WorkspaceListAll(ctx context.Context) ([]WorkspaceSummary, error) {
	rows, err := tx.query(ctx, `SELECT `+workspaceColumnsOf("w.")+`, coalesce(o.user_id, ''), coalesce(u.email, ''),
			(SELECT count(*) FROM workspace_members c WHERE c.workspace_id = w.id)
		FROM workspaces w
		LEFT JOIN workspace_members o ON o.workspace_id = w.id AND o.role = 'owner'
		LEFT JOIN users u ON u.id = o.user_id
		ORDER BY w.created_at, w.id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []WorkspaceSummary{}
	for rows.Next() {
		var s WorkspaceSummary
		if err := rows.Scan(append(workspaceDest(&s.Workspace), &s.OwnerID, &s.OwnerEmail, &s.MemberCount)...); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// OperatorMember is a member as the operator lists it: the moderation view plus the email.
type OperatorMember struct {
	ModeratedMember
	Email string `json:"email"`
}

// MemberListByOperator returns a page of a workspace's members in join order, with moderation
// state and email addresses. Codes: invalid_request (limit, cursor, role).
func (tx *Tx) MemberListByOperator(ctx context.Context, workspaceID string, p MemberListParams) (MemberPage[OperatorMember], error) {
	page, err := tx.memberPage(ctx, workspaceID, p)
	return mapMembers(page, func(e MemberEntry) OperatorMember {
		return OperatorMember{ModeratedMember: e.Moderated(tx.now), Email: e.User.Email}
	}), err
}

// WorkspaceOwner reads the owner of a workspace, for operator commands that act as the owner
// would. Codes: not_found.
func (tx *Tx) WorkspaceOwner(ctx context.Context, workspaceID string) (User, error) {
	u, err := scanUser(tx.queryRow(ctx, `SELECT `+userColumnsOf("u.")+`
		FROM workspace_members o JOIN users u ON u.id = o.user_id
		WHERE o.workspace_id = $1 AND o.role = 'owner'`, workspaceID))
	return u, notFoundAs(err, "workspace owner")
}
