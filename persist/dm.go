package persist

import (
	"context"
	"strings"
)

// DMInsertForTest writes a direct conversation's rows directly, without the rules of the DM API.
// Only test factories call it.
func (tx *Tx) DMInsertForTest(ctx context.Context, workspaceID string, memberIDs []string) (string, error) {
	id := NewID(PrefixDM, tx.now)
	if _, err := tx.exec(ctx, `INSERT INTO dms (id, route_id, workspace_id, member_key, created_at, last_activity_at)
		VALUES ($1, $2, $3, $4, $5, $5)`, id, RouteID("D", id), workspaceID, strings.Join(memberIDs, ","), tx.now); err != nil {
		return "", err
	}
	for _, m := range memberIDs {
		if _, err := tx.exec(ctx, `INSERT INTO dm_members (workspace_id, dm_id, user_id) VALUES ($1, $2, $3)`,
			workspaceID, id, m); err != nil {
			return "", err
		}
	}
	return id, nil
}
