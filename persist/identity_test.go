package persist_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func identitySignIn(ctx context.Context, store *persist.Store, in persist.IdentitySignIn) (persist.SignedIn, error) {
	return persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.SignedIn, error) { return tx.IdentitySignIn(ctx, in) })
}

// TestIdentitySignInConcurrent: first sign-ins of one account at once make one user, and
// first sign-ins of different accounts at once make one Guests workspace.
func TestIdentitySignInConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := persisttest.NewStore(t)
	place := persist.Placement{Workspace: persist.PlaceGuests, Role: persist.RoleMember}
	const n = 8
	users := make([]string, 2*n)
	var g errgroup.Group
	for i := range 2 * n {
		g.Go(func() error {
			subject := "same"
			if i >= n {
				subject = "other-" + string(rune('a'+i))
			}
			res, err := identitySignIn(ctx, store, persist.IdentitySignIn{Place: place, Identity: persist.ExternalIdentity{
				Provider: persist.ProviderGitHub, Subject: subject, Login: "octo", Email: "octo@example.com"}})
			users[i] = res.User.ID
			return err
		})
	}
	require.NoError(t, g.Wait())
	for i := 1; i < n; i++ {
		require.Equal(t, users[0], users[i])
	}
	seen := map[string]bool{}
	for _, id := range users[n:] {
		require.NotEqual(t, users[0], id)
		seen[id] = true
	}
	require.Len(t, seen, n)

	workspaces, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Workspace, error) {
		return tx.WorkspaceList(ctx, persist.Actor{UserID: users[0]})
	})
	require.NoError(t, err)
	require.Len(t, workspaces, 1)
	guests := workspaces[0]
	require.Equal(t, persist.GuestsWorkspaceSlug, guests.Slug)
	require.Equal(t, persist.GuestsWorkspaceName, guests.Name)
	for _, id := range users[n:] {
		m, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Member, error) { return tx.MemberGet(ctx, guests.ID, id) })
		require.NoError(t, err)
		require.Equal(t, persist.RoleMember, m.Role)
	}
}

// TestDefaultWorkspaceJoinConcurrent: first sign-ins into a server without a default workspace
// make one, owned by one of them, with the others as members.
func TestDefaultWorkspaceJoinConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := persisttest.NewStore(t)
	const n = 6
	joined := make([]persist.Member, n)
	var g errgroup.Group
	for i := range n {
		u := persisttest.User(t, store, nil)
		g.Go(func() error {
			var err error
			joined[i], err = persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Member, error) {
				_, m, err := tx.DefaultWorkspaceJoin(ctx, u.ID, false)
				return m, err
			})
			return err
		})
	}
	require.NoError(t, g.Wait())
	owners := 0
	for _, m := range joined {
		require.Equal(t, joined[0].WorkspaceID, m.WorkspaceID)
		if m.Role == persist.RoleOwner {
			owners++
		} else {
			require.Equal(t, persist.RoleMember, m.Role)
		}
	}
	require.Equal(t, 1, owners)
}
