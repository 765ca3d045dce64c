package persist

import "context"

// Standing is what a person's open socket rests on: their session and their membership of a
// workspace.
type Standing struct {
	SessionID, UserID, WorkspaceID string
}

// Standings re-checks many people's standings in one statement, as SessionLive and then
// ViewerFor would check each: out[i] is standings[i]'s viewer, or its refusal (unauthenticated
// for a session that ended, not_found for a deleted workspace, forbidden for a membership that
// ended). Sockets revalidate with it in bulk, so a hub of many members' sockets pays one query per
// batch instead of two per socket. Bots read through tokens and their owners: SessionLive's and
// ViewerFor's one-at-a-time path checks them.
func (tx *Reader) Standings(ctx context.Context, standings []Standing) ([]StandingResult, error) {
	sessions := make([]string, len(standings))
	users := make([]string, len(standings))
	workspaces := make([]string, len(standings))
	for i, s := range standings {
		sessions[i], users[i], workspaces[i] = s.SessionID, s.UserID, s.WorkspaceID
	}
	// Each look-up is a LATERAL with LIMIT 1, so that it stays an index probe per standing: as
	// plain subqueries the planner hashes the whole sessions and users tables once a batch is
	// large, a cost that grows with every session ever made rather than with the batch.
	rows, err := tx.query(ctx, `
		SELECT k.i::int, s.live IS NOT NULL, m.role, w.found IS NOT NULL
		FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS k(session_id, user_id, workspace_id, i)
		LEFT JOIN LATERAL (SELECT true AS live FROM sessions s JOIN users u ON u.id = s.user_id
			WHERE s.id = k.session_id AND s.user_id = k.user_id AND s.revoked_at IS NULL AND s.expires_at > $4
				AND u.deleted_at IS NULL LIMIT 1) s ON true
		LEFT JOIN LATERAL (SELECT m.role FROM workspace_members m
			WHERE m.workspace_id = k.workspace_id AND m.user_id = k.user_id LIMIT 1) m ON true
		LEFT JOIN LATERAL (SELECT true AS found FROM workspaces w WHERE w.id = k.workspace_id AND m.role IS NULL LIMIT 1) w ON true`,
		sessions, users, workspaces, tx.now)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]StandingResult, len(standings))
	for rows.Next() {
		var i int
		var live, workspace bool
		var role *string
		if err := rows.Scan(&i, &live, &role, &workspace); err != nil {
			return nil, err
		}
		s, r := standings[i-1], &out[i-1]
		switch {
		case !live:
			r.Err = Errorf(CodeUnauthenticated, "the session has ended")
		case role != nil:
			r.Viewer = Viewer{WorkspaceID: s.WorkspaceID, UserID: s.UserID, Guest: *role == RoleGuest}
		case !workspace:
			r.Err = NotFound("workspace")
		default:
			r.Err = Forbidden("you are not a member of this workspace")
		}
	}
	return out, rows.Err()
}

// StandingResult is one standing's verdict: a viewer, or the refusal that ends the socket.
type StandingResult struct {
	Viewer Viewer
	Err    error
}
