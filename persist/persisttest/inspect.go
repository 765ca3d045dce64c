package persisttest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/natterchat/natter/persist"
)

// urls remembers the database of every store NewStore opened, so that test-only look-ups can
// read it directly instead of through test-only methods of persist.
var urls sync.Map // *persist.Store → string

// conn connects to the database of a store NewStore opened; the connection closes when the test
// ends.
func conn(t testing.TB, store *persist.Store) *pgx.Conn {
	t.Helper()
	url, ok := urls.Load(store)
	if !ok {
		t.Fatal("persisttest: the store was not opened by persisttest.NewStore")
	}
	c, err := pgx.Connect(context.Background(), url.(string))
	if err != nil {
		t.Fatalf("persisttest: connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// Fingerprint digests, table by table, what belongs to workspaceID (every row of a table with a
// workspace_id column but the relay's positions, and the workspace row) and the user rows of
// userIDs, leaving out last_used_at columns (authentication writes them). Tables added later are
// covered without change: an authorization test compares digests taken before and after hostile
// requests to prove that nothing of the workspace changed.
func Fingerprint(t testing.TB, store *persist.Store, workspaceID string, userIDs []string) map[string]string {
	t.Helper()
	ctx := context.Background()
	c := conn(t, store)
	rows, err := c.Query(ctx, `SELECT table_name::text, bool_or(column_name = 'workspace_id')
		FROM information_schema.columns WHERE table_schema = current_schema()
		GROUP BY table_name ORDER BY table_name`)
	if err != nil {
		t.Fatalf("fingerprint: %v", err)
	}
	type table struct {
		name    string
		scoped  bool
		matches string
		arg     any
	}
	var tables []table
	for rows.Next() {
		var tb table
		if err := rows.Scan(&tb.name, &tb.scoped); err != nil {
			t.Fatalf("fingerprint: %v", err)
		}
		switch {
		case tb.name == "relay_positions":
			// The relay's own bookkeeping, written in the background as it catches up with
			// events committed before the first digest; no request writes it.
			continue
		case tb.scoped:
			tb.matches, tb.arg = "workspace_id = $1", workspaceID
		case tb.name == "workspaces":
			tb.matches, tb.arg = "id = $1", workspaceID
		case tb.name == "users":
			tb.matches, tb.arg = "id = ANY($1)", userIDs
		default:
			continue
		}
		tables = append(tables, tb)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatalf("fingerprint: %v", err)
	}
	out := map[string]string{}
	for _, tb := range tables {
		var digest string
		if err := c.QueryRow(ctx, `SELECT coalesce(md5(string_agg(r, '|' ORDER BY r)), '') FROM (
				SELECT (to_jsonb(t) - 'last_used_at')::text AS r FROM `+pgx.Identifier{tb.name}.Sanitize()+` t WHERE `+tb.matches+`) AS x`,
			tb.arg).Scan(&digest); err != nil {
			t.Fatalf("fingerprint %s: %v", tb.name, err)
		}
		out[tb.name] = digest
	}
	return out
}

// SlashInvocationOutcome reads the stored callback outcome of an invocation (its trigger_id); no
// route shows invocations.
func SlashInvocationOutcome(t testing.TB, store *persist.Store, id string) persist.SlashCallbackOutcome {
	t.Helper()
	var o persist.SlashCallbackOutcome
	err := conn(t, store).QueryRow(context.Background(), `SELECT coalesce(callback_status, 0), coalesce(callback_body, ''),
		coalesce(callback_error, '') FROM slash_command_invocations WHERE id = $1`, id).Scan(&o.Status, &o.Body, &o.Error)
	if errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("no invocation %s", id)
	}
	if err != nil {
		t.Fatalf("slash invocation outcome: %v", err)
	}
	return o
}

// AttachmentCount counts the attachment links of a workspace, to prove that a refused or failed
// operation linked nothing.
func AttachmentCount(t testing.TB, store *persist.Store, workspaceID string) int {
	t.Helper()
	var n int
	if err := conn(t, store).QueryRow(context.Background(), `SELECT count(*) FROM message_attachments WHERE workspace_id = $1`,
		workspaceID).Scan(&n); err != nil {
		t.Fatalf("attachment count: %v", err)
	}
	return n
}

// insertDM writes a direct conversation's rows directly, without the rules of the DM API.
func insertDM(t testing.TB, store *persist.Store, workspaceID string, memberIDs []string) string {
	t.Helper()
	ctx := context.Background()
	now := store.Now().UTC()
	id := persist.NewID(persist.PrefixDM, now)
	err := pgx.BeginFunc(ctx, conn(t, store), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO dms (id, route_id, workspace_id, member_key, created_at, last_activity_at)
			VALUES ($1, $2, $3, $4, $5, $5)`, id, persist.RouteID("D", id), workspaceID, strings.Join(memberIDs, ","), now); err != nil {
			return err
		}
		for _, m := range memberIDs {
			if _, err := tx.Exec(ctx, `INSERT INTO dm_members (workspace_id, dm_id, user_id) VALUES ($1, $2, $3)`,
				workspaceID, id, m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("factory dm: %v", err)
	}
	return id
}
