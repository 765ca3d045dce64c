package persist

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// FingerprintForTest digests, table by table, what belongs to workspaceID (every row of a table
// with a workspace_id column but the relay's positions, and the workspace row) and the user rows
// of userIDs, leaving out last_used_at columns (authentication writes them). Tables added later are covered without
// change. Only tests call it: an authorization test compares digests taken before and after
// hostile requests to prove that nothing of the workspace changed.
func (tx *Tx) FingerprintForTest(ctx context.Context, workspaceID string, userIDs []string) (map[string]string, error) {
	rows, err := tx.query(ctx, `SELECT table_name::text, bool_or(column_name = 'workspace_id')
		FROM information_schema.columns WHERE table_schema = current_schema()
		GROUP BY table_name ORDER BY table_name`)
	if err != nil {
		return nil, err
	}
	type table struct {
		name    string
		scoped  bool
		matches string
		arg     any
	}
	var tables []table
	for rows.Next() {
		var t table
		if err := rows.Scan(&t.name, &t.scoped); err != nil {
			rows.Close()
			return nil, err
		}
		switch {
		case t.name == "relay_positions":
			// The relay's own bookkeeping, written in the background as it catches up with
			// events committed before the first digest; no request writes it.
			continue
		case t.scoped:
			t.matches, t.arg = "workspace_id = $1", workspaceID
		case t.name == "workspaces":
			t.matches, t.arg = "id = $1", workspaceID
		case t.name == "users":
			t.matches, t.arg = "id = ANY($1)", userIDs
		default:
			continue
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, t := range tables {
		var digest string
		if err := tx.queryRow(ctx, `SELECT coalesce(md5(string_agg(r, '|' ORDER BY r)), '') FROM (
				SELECT (to_jsonb(t) - 'last_used_at')::text AS r FROM `+pgx.Identifier{t.name}.Sanitize()+` t WHERE `+t.matches+`) AS x`,
			t.arg).Scan(&digest); err != nil {
			return nil, err
		}
		out[t.name] = digest
	}
	return out, nil
}
