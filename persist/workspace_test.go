package persist_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// botUser creates a bot user (owned by ownerID when not empty) that is a member of workspaceID.
func botUser(t *testing.T, store *persist.Store, workspaceID, ownerID string) persist.User {
	t.Helper()
	ctx := context.Background()
	u, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) {
		return tx.UserCreate(ctx, persist.UserCreateParams{Kind: persist.KindBot, OwnerUserID: ownerID, DisplayName: "Bot"})
	})
	require.NoError(t, err)
	persisttest.Member(t, store, workspaceID, u.ID, persist.RoleBot)
	return u
}

func requireCode(t *testing.T, err error, code persist.Code) {
	t.Helper()
	e, ok := persist.ErrorOf(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, code, e.Code, "%v", err)
}

// TestBotTokenActors runs the workspace and channel rules with bot-token actors, as the bots
// work will build them: a token reaches only its workspace, may update channels (its route
// required channels:write), and a user bot acts only while its owner belongs.
func TestBotTokenActors(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	other := persisttest.Workspace(t, store, owner.ID)
	c := persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, "general")
	service := botUser(t, store, w.ID, "")
	persisttest.Member(t, store, other.ID, service.ID, persist.RoleBot)
	token := persist.Actor{UserID: service.ID, Kind: persist.KindBot, TokenWorkspaceID: w.ID, IssuerUserID: owner.ID, Scopes: []string{"channels:write"}}

	t.Run("TokenUpdatesChannels", func(t *testing.T) {
		t.Parallel()
		got, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Channel, error) {
			c, _, err := tx.ChannelUpdate(ctx, token, c.ID, persist.ChannelPatch{SidebarSection: persisttest.Ptr("Bots")})
			return c, err
		})
		require.NoError(t, err)
		require.Equal(t, "Bots", got.SidebarSection)
	})

	t.Run("BotWithoutTokenIsNotOwner", func(t *testing.T) {
		t.Parallel()
		err := store.WithTx(ctx, func(tx *persist.Tx) error {
			_, _, err := tx.ChannelUpdate(ctx, persist.ActorFor(service), c.ID, persist.ChannelPatch{Kind: persisttest.Ptr("x")})
			return err
		})
		requireCode(t, err, persist.CodeForbidden)
	})

	t.Run("TokenStaysInItsWorkspace", func(t *testing.T) {
		t.Parallel()
		elsewhere := persisttest.Channel(t, store, persist.ActorFor(owner), other.ID, "elsewhere")
		err := store.WithTx(ctx, func(tx *persist.Tx) error {
			_, _, err := tx.ChannelUpdate(ctx, token, elsewhere.ID, persist.ChannelPatch{Kind: persisttest.Ptr("x")})
			return err
		})
		requireCode(t, err, persist.CodeForbidden)
		list, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Workspace, error) { return tx.WorkspaceList(ctx, token) })
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, w.ID, list[0].ID)
		require.Equal(t, persist.RoleBot, list[0].Role)
	})

	t.Run("TimedOutTokenCannotUpdate", func(t *testing.T) {
		t.Parallel()
		muted := botUser(t, store, w.ID, "")
		_, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.ModeratedMember, error) {
			m, _, err := tx.MemberModerate(ctx, persist.ActorFor(owner), w.ID, muted.ID, persist.ModerationPatch{TimeoutMinutes: persisttest.Ptr(5)})
			return m, err
		})
		require.NoError(t, err)
		mutedToken := persist.Actor{UserID: muted.ID, Kind: persist.KindBot, TokenWorkspaceID: w.ID}
		err = store.WithTx(ctx, func(tx *persist.Tx) error {
			_, _, err := tx.ChannelUpdate(ctx, mutedToken, c.ID, persist.ChannelPatch{Kind: persisttest.Ptr("x")})
			return err
		})
		requireCode(t, err, persist.CodeForbidden)
	})

	t.Run("UserBotNeedsItsOwnerInTheWorkspace", func(t *testing.T) {
		t.Parallel()
		human := persisttest.User(t, store, nil)
		persisttest.Member(t, store, other.ID, human.ID, persist.RoleMember)
		userBot := botUser(t, store, w.ID, human.ID)
		actor := persist.Actor{UserID: userBot.ID, Kind: persist.KindBot, TokenWorkspaceID: w.ID, OwnerUserID: human.ID}
		_, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Channel, error) { return tx.ChannelList(ctx, actor, w.ID) })
		requireCode(t, err, persist.CodeForbidden)
		list, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Workspace, error) { return tx.WorkspaceList(ctx, actor) })
		require.NoError(t, err)
		require.Empty(t, list)

		persisttest.Member(t, store, w.ID, human.ID, persist.RoleMember)
		channels, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Channel, error) { return tx.ChannelList(ctx, actor, w.ID) })
		require.NoError(t, err)
		require.NotEmpty(t, channels)

		// A user bot never exceeds its owner: a member's bot cannot update channels, which
		// only the workspace owner may.
		err = store.WithTx(ctx, func(tx *persist.Tx) error {
			_, _, err := tx.ChannelUpdate(ctx, actor, c.ID, persist.ChannelPatch{Kind: persisttest.Ptr("x")})
			return err
		})
		requireCode(t, err, persist.CodeForbidden)
	})

	t.Run("OwnersUserBotUpdatesChannels", func(t *testing.T) {
		t.Parallel()
		ownersBot := botUser(t, store, w.ID, owner.ID)
		actor := persist.Actor{UserID: ownersBot.ID, Kind: persist.KindBot, TokenWorkspaceID: w.ID, OwnerUserID: owner.ID}
		err := store.WithTx(ctx, func(tx *persist.Tx) error {
			_, _, err := tx.ChannelUpdate(ctx, actor, c.ID, persist.ChannelPatch{SidebarSection: persisttest.Ptr("Owner's bot")})
			return err
		})
		require.NoError(t, err)
	})
}

// TestOneOwner checks the store refuses a second owner outside a transfer.
func TestOneOwner(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	other := persisttest.User(t, store, nil)
	err := store.WithTx(ctx, func(tx *persist.Tx) error {
		_, err := tx.MemberAdd(ctx, w.ID, other.ID, persist.RoleOwner)
		return err
	})
	requireCode(t, err, persist.CodeConflict)
}

// TestMemberJoin covers the admission rules shared by the operator command and invites.
func TestMemberJoin(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	join := func(userID, role string) (persist.Member, error) {
		return persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Member, error) {
			return tx.MemberJoin(ctx, w.ID, userID, role)
		})
	}
	for _, role := range []string{persist.RoleOwner, persist.RoleBot, "admin"} {
		_, err := join(persisttest.User(t, store, nil).ID, role)
		requireCode(t, err, persist.CodeInvalidRequest)
	}
	bot := botUser(t, store, persisttest.Workspace(t, store, owner.ID).ID, "")
	_, err := join(bot.ID, persist.RoleMember)
	requireCode(t, err, persist.CodeInvalidRequest)
	_, err = join("usr_nobody", persist.RoleMember)
	requireCode(t, err, persist.CodeNotFound)

	m, err := join(persisttest.User(t, store, nil).ID, "")
	require.NoError(t, err)
	require.Equal(t, persist.RoleMember, m.Role)
	again, err := join(owner.ID, persist.RoleGuest)
	require.NoError(t, err)
	require.Equal(t, persist.RoleOwner, again.Role, "an existing member keeps their role")
}
