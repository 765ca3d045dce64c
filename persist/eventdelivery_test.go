package persist_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestEventDeliveryPlan: an event is delivered only to an active subscription of its type,
// once per cursor, and only when the subscription's bot may see it.
func TestEventDeliveryPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	friend := persisttest.User(t, store, nil)
	ws := persisttest.Workspace(t, store, owner.ID)
	persisttest.Member(t, store, ws.ID, friend.ID, persist.RoleMember)
	bot, _ := persisttest.Bot(t, store, owner, ws.ID, nil)
	actor := persist.ActorFor(owner)
	private := persisttest.DM(t, store, ws.ID, owner.ID, friend.ID)
	withBot := persisttest.DM(t, store, ws.ID, owner.ID, bot.ID)
	sub, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.EventSubscription, error) {
		inst, err := tx.AppInstallationCreate(ctx, actor, ws.ID, persist.AppInstallationCreateParams{AppSlug: "a", BotUserID: bot.ID})
		if err != nil {
			return persist.EventSubscription{}, err
		}
		return tx.EventSubscriptionCreate(ctx, actor, ws.ID, persist.EventSubscriptionCreateParams{
			AppInstallationID: inst.Installation.ID, EventTypes: []string{"message.created"}, CallbackURL: "https://hooks.example.com/x"})
	})
	require.NoError(t, err)
	plan := func(cursor int64, scope persist.EventScope, typ string) bool {
		t.Helper()
		ok, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (bool, error) {
			_, ok, err := tx.EventDeliveryPlan(ctx, sub.ID, cursor, scope, typ)
			return ok, err
		})
		require.NoError(t, err)
		return ok
	}
	require.True(t, plan(100, persist.EventScope{ChannelID: "chn_x"}, "message.created"))
	require.False(t, plan(101, persist.EventScope{ChannelID: "chn_x"}, "reaction.added"), "not subscribed")
	require.False(t, plan(102, persist.EventScope{DirectConversationID: private}, "message.created"), "a DM the bot is not in")
	require.True(t, plan(103, persist.EventScope{DirectConversationID: withBot}, "message.created"))
	require.False(t, plan(102, persist.EventScope{ChannelID: "chn_x"}, "message.created"), "a cursor already handled")
	_, err = persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.EventSubscription, error) {
		return tx.EventSubscriptionRevoke(ctx, actor, sub.ID)
	})
	require.NoError(t, err)
	require.False(t, plan(200, persist.EventScope{ChannelID: "chn_x"}, "message.created"), "revoked")
}
