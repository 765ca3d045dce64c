package persist_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestStoreRefusesBotsWhatRoutesKeepForPeople: the routes that list or manage bots and
// integrations are for people only (403 human_only), and the store refuses a bot actor by
// itself too, so a route added later without the route-table guard still cannot serve one.
func TestStoreRefusesBotsWhatRoutesKeepForPeople(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	bot, tok := persisttest.Bot(t, store, owner, w.ID, &persisttest.BotOpts{Scopes: []string{"bot:admin"}})
	for name, call := range map[string]func(tx *persist.Tx, a persist.Actor) error{
		"BotListByWorkspace": func(tx *persist.Tx, a persist.Actor) error {
			_, err := tx.BotListByWorkspace(ctx, a, w.ID)
			return err
		},
		"AppInstallationList": func(tx *persist.Tx, a persist.Actor) error {
			_, err := tx.AppInstallationList(ctx, a, w.ID)
			return err
		},
		"SlashCommandList": func(tx *persist.Tx, a persist.Actor) error {
			_, err := tx.SlashCommandList(ctx, a, w.ID)
			return err
		},
		"ConnectedAccountList": func(tx *persist.Tx, a persist.Actor) error {
			_, err := tx.ConnectedAccountList(ctx, a, w.ID)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := store.WithTx(ctx, func(tx *persist.Tx) error { return call(tx, persist.BotActor(tok, bot)) })
			requireCode(t, err, persist.CodeForbidden)
			// The owner passes: the refusal is the bot's.
			require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error { return call(tx, persist.ActorFor(owner)) }))
		})
	}
}
