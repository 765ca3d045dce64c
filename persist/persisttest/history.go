package persisttest

import (
	"context"
	"testing"

	"github.com/natterchat/natter/persist"
)

// StoreURL is the connection string of a store NewStore opened, for tests that run the command
// line against a harness's database.
func StoreURL(t testing.TB, store *persist.Store) string {
	t.Helper()
	url, ok := urls.Load(store)
	if !ok {
		t.Fatal("persisttest: the store was not opened by persisttest.NewStore")
	}
	return url.(string)
}

// ImportedIDs maps every source id an import into workspaceID recorded to the id it became.
func ImportedIDs(t testing.TB, store *persist.Store, workspaceID string) map[string]string {
	t.Helper()
	rows, err := conn(t, store).Query(context.Background(),
		`SELECT source_id, target_id FROM import_records WHERE workspace_id = $1`, workspaceID)
	if err != nil {
		t.Fatalf("persisttest: import records: %v", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var from, to string
		if err := rows.Scan(&from, &to); err != nil {
			t.Fatalf("persisttest: import records: %v", err)
		}
		out[from] = to
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("persisttest: import records: %v", err)
	}
	return out
}
