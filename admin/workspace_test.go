package admin_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestAdminWorkspaceCreateAndDelete: the first-run path of `serve` (a workspace with #general and
// its owner by email) and the deletion of a workspace, each refusing bad input without a change.
func TestAdminWorkspaceCreateAndDelete(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	base := []string{"--database-url", url}
	ctx := context.Background()

	_, err := run(t, append([]string{"admin", "workspace", "create", "--name", "Acme", "--owner-email", "not-an-email"}, base...)...)
	require.ErrorContains(t, err, "admin workspace create: --owner-email not-an-email: ")
	_, err = run(t, append([]string{"admin", "workspace", "create", "--name", "  ", "--owner-email", "ops@example.com"}, base...)...)
	require.ErrorContains(t, err, "name must be 1 to 80 characters")
	out, err := run(t, append([]string{"admin", "workspace", "list", "--json"}, base...)...)
	require.NoError(t, err)
	require.JSONEq(t, `{"workspaces":[]}`, out, "refusals created nothing")

	out, err = run(t, append([]string{"admin", "workspace", "create", "--name", "Acme Corp", "--owner-email", "ops@example.com", "--json"}, base...)...)
	require.NoError(t, err)
	var created struct {
		Workspace struct{ ID, Slug, Name string } `json:"workspace"`
		Owner     struct{ ID, Email string }      `json:"owner"`
		Channel   struct{ Name string }           `json:"channel"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &created), out)
	require.Equal(t, "acme-corp", created.Workspace.Slug)
	require.Equal(t, "ops@example.com", created.Owner.Email)
	require.Equal(t, "general", created.Channel.Name)

	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	owner, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) { return tx.WorkspaceOwner(ctx, created.Workspace.ID) })
	require.NoError(t, err)
	require.Equal(t, created.Owner.ID, owner.ID)
	token, err := run(t, append([]string{"admin", "magic-link", "create", "--email", "ops@example.com"}, base...)...)
	require.NoError(t, err)
	require.Regexp(t, `^mgt_\S+\n$`, token, "the owner's first sign-in")

	_, err = run(t, append([]string{"admin", "workspace", "delete", "--workspace", created.Workspace.ID, "--confirm", "acme"}, base...)...)
	require.ErrorContains(t, err, "--confirm: must be the workspace's slug, acme-corp")
	_, err = persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Workspace, error) { return tx.WorkspaceGet(ctx, created.Workspace.ID) })
	require.NoError(t, err, "still there after a refused delete")

	out, err = run(t, append([]string{"admin", "workspace", "delete", "--workspace", "acme-corp", "--confirm", "acme-corp",
		"--upload-dir", t.TempDir()}, base...)...)
	require.NoError(t, err)
	require.Contains(t, out, "workspace acme-corp ("+created.Workspace.ID+") deleted")
	_, err = persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Workspace, error) { return tx.WorkspaceGet(ctx, created.Workspace.ID) })
	require.ErrorContains(t, err, "not found")
}
