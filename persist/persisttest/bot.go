package persisttest

import (
	"context"
	"testing"

	"github.com/natterchat/natter/persist"
)

// BotOpts shapes a factory bot; zero fields get defaults.
type BotOpts struct {
	// UserBot makes a user bot owned by the creator; otherwise a service bot.
	UserBot bool
	Handle  *string
	// Scopes of the first token; nil gives persist.DefaultScopes.
	Scopes []string
}

// Bot creates a bot in workspaceID through the store's rules, as creator (an owner or moderator
// for a service bot; the owner for a user bot), and returns it with its first token (raw value in
// Token).
func Bot(t testing.TB, store *persist.Store, creator persist.User, workspaceID string, opts *BotOpts) (persist.User, persist.BotToken) {
	t.Helper()
	if opts == nil {
		opts = &BotOpts{}
	}
	p := persist.BotCreateParams{DisplayName: "Bot " + unique(), InitialToken: true, Scopes: opts.Scopes}
	if opts.UserBot {
		p.OwnerUserID = creator.ID
	}
	if opts.Handle != nil {
		p.Handle = *opts.Handle
	}
	ctx := context.Background()
	res, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.BotCreated, error) {
		return tx.BotCreate(ctx, persist.ActorFor(creator), workspaceID, p)
	})
	if err != nil {
		t.Fatalf("factory bot: %v", err)
	}
	return res.Bot, *res.Token
}

// BotToken mints another token for a bot of workspaceID as creator, with scopes (scopes or
// bundles; none gives persist.DefaultScopes).
func BotToken(t testing.TB, store *persist.Store, creator persist.User, workspaceID, botID string, scopes ...string) persist.BotToken {
	t.Helper()
	ctx := context.Background()
	tok, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.BotToken, error) {
		return tx.BotTokenCreate(ctx, persist.ActorFor(creator), workspaceID, botID, persist.BotTokenParams{Scopes: scopes})
	})
	if err != nil {
		t.Fatalf("factory bot token: %v", err)
	}
	return tok
}
