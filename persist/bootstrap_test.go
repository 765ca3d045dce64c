package persist_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func bootstrap(t *testing.T, store *persist.Store) persist.Bootstrap {
	t.Helper()
	ctx := context.Background()
	b, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Bootstrap, error) { return tx.DevBootstrap(ctx) })
	require.NoError(t, err)
	return b
}

func TestDevBootstrap(t *testing.T) {
	t.Parallel()
	t.Run("CreatesOwnerWorkspaceAndGeneralOnce", func(t *testing.T) {
		t.Parallel()
		store := persisttest.NewStore(t)
		var g errgroup.Group
		results := make([]persist.Bootstrap, 4)
		for i := range results {
			g.Go(func() error {
				ctx := context.Background()
				b, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Bootstrap, error) { return tx.DevBootstrap(ctx) })
				results[i] = b
				return err
			})
		}
		require.NoError(t, g.Wait())
		created := 0
		for _, b := range results {
			require.Equal(t, results[0].Workspace.ID, b.Workspace.ID)
			require.Equal(t, results[0].Owner.ID, b.Owner.ID)
			if b.Created {
				created++
			}
		}
		require.Equal(t, 1, created)
		require.Equal(t, persist.DevOwnerName, results[0].Owner.DisplayName)

		ctx := context.Background()
		events, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Event, error) {
			return tx.EventListAfter(ctx, results[0].Workspace.ID, 0, 10)
		})
		require.NoError(t, err)
		require.Len(t, events, 1)
		require.Equal(t, "channel.created", events[0].Type)
		require.Contains(t, string(events[0].Payload), `"name":"general"`)
	})

	t.Run("PinnedOwnerWins", func(t *testing.T) {
		t.Parallel()
		store := persisttest.NewStore(t)
		persisttest.User(t, store, nil) // an earlier user who is not the pinned one
		ctx := context.Background()
		pinned, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) {
			return tx.OwnerPin(ctx, "Chief@Example.com", "Chief")
		})
		require.NoError(t, err)
		b := bootstrap(t, store)
		require.Equal(t, pinned.ID, b.Owner.ID)
		m, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Member, error) {
			return tx.MemberGet(ctx, b.Workspace.ID, pinned.ID)
		})
		require.NoError(t, err)
		require.Equal(t, persist.RoleOwner, m.Role)
	})

	t.Run("FirstHumanWithoutPin", func(t *testing.T) {
		t.Parallel()
		store := persisttest.NewStore(t)
		first := persisttest.User(t, store, nil)
		persisttest.User(t, store, nil)
		require.Equal(t, first.ID, bootstrap(t, store).Owner.ID)
	})
}

func TestMagicLinkConsumeConcurrently(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	token, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (string, error) {
		return tx.MagicLinkCreate(ctx, "race@example.com", "Race")
	})
	require.NoError(t, err)
	var g errgroup.Group
	wins := make([]bool, 8)
	for i := range wins {
		g.Go(func() error {
			err := store.WithTx(ctx, func(tx *persist.Tx) error { _, _, _, err := tx.MagicLinkConsume(ctx, token); return err })
			wins[i] = err == nil
			return nil
		})
	}
	require.NoError(t, g.Wait())
	n := 0
	for _, w := range wins {
		if w {
			n++
		}
	}
	require.Equal(t, 1, n, "a magic link signs in exactly once")
}
