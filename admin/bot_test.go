package admin_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestAdminBotCreate(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	ctx := context.Background()
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	owner := persisttest.User(t, store, &persisttest.UserOpts{Email: persisttest.Ptr("boss@example.com")})
	member := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	persisttest.Member(t, store, w.ID, member.ID, persist.RoleMember)
	base := []string{"admin", "bot", "create", "--database-url", url, "--workspace", w.ID}

	t.Run("JSONOutput", func(t *testing.T) {
		t.Parallel()
		out, err := run(t, append(base, "--created-by", owner.ID, "--name", "Deployer", "--handle", "deployer",
			"--scopes", "bot:read,commands:write")...)
		require.NoError(t, err)
		var got struct {
			Bot      persist.PublicUser `json:"bot"`
			Token    string             `json:"token"`
			BotToken persist.BotToken   `json:"bot_token"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		require.Equal(t, persist.KindBot, got.Bot.Kind)
		require.Equal(t, "deployer", got.Bot.Handle)
		require.Empty(t, got.Bot.OwnerUserID)
		require.True(t, strings.HasPrefix(got.Token, "ccb_"))
		require.Equal(t, got.Token, got.BotToken.Token)
		require.Equal(t, w.ID, got.BotToken.WorkspaceID)
		require.Contains(t, got.BotToken.Scopes, persist.ScopeCommandsWrite)
		require.Contains(t, got.BotToken.Scopes, persist.ScopeMessagesRead)
		require.NotContains(t, got.BotToken.Scopes, persist.ScopeMessagesWrite)

		bot, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) {
			_, u, err := tx.BotTokenAuthenticate(ctx, got.Token)
			return u, err
		})
		require.NoError(t, err)
		require.Equal(t, got.Bot.ID, bot.ID, "the printed token authenticates as the bot")
	})
	t.Run("PlainUserBotByEmail", func(t *testing.T) {
		t.Parallel()
		bySlug := []string{"admin", "bot", "create", "--database-url", url, "--workspace", w.Slug}
		out, err := run(t, append(bySlug, "--created-by", "boss@example.com", "--owner", owner.ID, "--name", "Mine", "--plain")...)
		require.NoError(t, err)
		token := strings.TrimSpace(out)
		require.True(t, strings.HasPrefix(token, "ccb_"), out)
		bot, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) {
			_, u, err := tx.BotTokenAuthenticate(ctx, token)
			return u, err
		})
		require.NoError(t, err)
		require.Equal(t, owner.ID, bot.OwnerUserID)
	})
	t.Run("TheAPIRulesApply", func(t *testing.T) {
		t.Parallel()
		_, err := run(t, append(base, "--created-by", member.ID, "--name", "Nope")...)
		require.ErrorContains(t, err, "owner or moderator")
		_, err = run(t, append(base, "--created-by", owner.ID, "--owner", member.ID, "--name", "Nope")...)
		require.ErrorContains(t, err, "owner_user_id")
		_, err = run(t, append(base, "--created-by", "usr_nobody", "--name", "Nope")...)
		require.ErrorContains(t, err, "--created-by")
		_, err = run(t, append(base, "--created-by", owner.ID, "--name", "Nope", "--scopes", "everything")...)
		require.ErrorContains(t, err, "unknown scope")
		_, err = run(t, "admin", "bot", "create", "--database-url", url, "--workspace", "nowhere", "--created-by", owner.ID, "--name", "Nope")
		require.ErrorContains(t, err, "--workspace")
	})
}
