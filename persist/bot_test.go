package persist_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestUserDeleteRetiresTheirUserBots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	userBot, userTok := persisttest.Bot(t, store, owner, w.ID, &persisttest.BotOpts{UserBot: true, Handle: persisttest.Ptr("helper")})
	serviceBot, serviceTok := persisttest.Bot(t, store, owner, w.ID, nil)
	session := persisttest.Session(t, store, owner.ID)

	require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error { return tx.UserDelete(ctx, owner.ID) }))

	err := store.WithTx(ctx, func(tx *persist.Tx) error { _, _, err := tx.BotTokenAuthenticate(ctx, userTok.Token); return err })
	requireErrCode(t, err, persist.CodeUnauthenticated)
	_, _, err = store.BotTokenAuthenticate(ctx, userTok.Token)
	requireErrCode(t, err, persist.CodeUnauthenticated) // the one-statement authentication of requests too
	err = store.WithTx(ctx, func(tx *persist.Tx) error { _, _, err := tx.SessionResolve(ctx, session); return err })
	requireErrCode(t, err, persist.CodeUnauthenticated)

	gone, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) { return tx.UserGet(ctx, userBot.ID) })
	require.NoError(t, err)
	require.NotNil(t, gone.DeletedAt)
	require.Empty(t, gone.Handle)
	require.Equal(t, "helper", gone.FormerHandle)
	_, err = persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Member, error) { return tx.MemberGet(ctx, w.ID, userBot.ID) })
	requireErrCode(t, err, persist.CodeNotFound)

	// The owner's service bot belongs to the workspace, not to them.
	alive, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) {
		_, u, err := tx.BotTokenAuthenticate(ctx, serviceTok.Token)
		return u, err
	})
	require.NoError(t, err)
	require.Equal(t, serviceBot.ID, alive.ID)
	tok, alive, err := store.BotTokenAuthenticate(ctx, serviceTok.Token)
	require.NoError(t, err)
	require.Equal(t, serviceBot.ID, alive.ID)
	require.NotNil(t, tok.LastUsedAt, "the use is recorded")
	_, _, err = store.BotTokenAuthenticate(ctx, "ccb_unknown")
	requireErrCode(t, err, persist.CodeUnauthenticated)

	// The handle is free again, the deleted account cannot be deleted twice.
	persisttest.User(t, store, &persisttest.UserOpts{Handle: persisttest.Ptr("helper")})
	err = store.WithTx(ctx, func(tx *persist.Tx) error { return tx.UserDelete(ctx, owner.ID) })
	requireErrCode(t, err, persist.CodeNotFound)
}

func TestBotCreateSetupNonceUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	const n = 6
	results, errs := concurrently(n, func(int) (persist.BotCreated, error) {
		return persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.BotCreated, error) {
			return tx.BotCreate(ctx, persist.ActorFor(owner), w.ID, persist.BotCreateParams{DisplayName: "Racer",
				InitialToken: true, SetupNonce: "race-nonce-0123456789"})
		})
	})
	created := 0
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, results[0].Bot.ID, results[i].Bot.ID)
		require.Equal(t, results[0].Token.ID, results[i].Token.ID, "one token row")
		if !results[i].Replayed {
			created++
		}
	}
	require.Equal(t, 1, created)
}

func TestBotSetupCodeClaimUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	bot, _ := persisttest.Bot(t, store, owner, w.ID, nil)
	code, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.SetupCode, error) {
		return tx.BotSetupCodeCreate(ctx, persist.ActorFor(owner), w.ID, bot.ID, persist.SetupCodeParams{})
	})
	require.NoError(t, err)
	_, errs := concurrently(6, func(int) (persist.SetupClaim, error) {
		return persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.SetupClaim, error) {
			return tx.BotSetupCodeClaim(ctx, code.Code)
		})
	})
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		requireErrCode(t, err, persist.CodeNotFound)
	}
	require.Equal(t, 1, won, "a code mints exactly one token")
}

// concurrently runs fn(0) … fn(n-1) at the same time and returns their results by index.
func concurrently[T any](n int, fn func(i int) (T, error)) ([]T, []error) {
	out, errs := make([]T, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i], errs[i] = fn(i) })
	}
	wg.Wait()
	return out, errs
}

func requireErrCode(t *testing.T, err error, code persist.Code) {
	t.Helper()
	e, ok := persist.ErrorOf(err)
	require.True(t, ok, "want %s, got %v", code, err)
	require.Equal(t, code, e.Code, e.Message)
}

func TestBotMembershipRemoveLeavesNoLiveToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	bot, _ := persisttest.Bot(t, store, owner, w.ID, nil)
	// Six mints and the removal race: the removal is the seventh.
	const minters = 6
	minted, errs := concurrently(minters+1, func(i int) (persist.BotToken, error) {
		if i == minters {
			return persist.BotToken{}, store.WithTx(ctx, func(tx *persist.Tx) error {
				return tx.BotMembershipRemove(ctx, persist.ActorFor(owner), w.ID, bot.ID)
			})
		}
		return persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.BotToken, error) {
			return tx.BotTokenCreate(ctx, persist.ActorFor(owner), w.ID, bot.ID, persist.BotTokenParams{})
		})
	})
	require.NoError(t, errs[minters], "the removal")
	for i := range minters {
		if errs[i] != nil {
			requireErrCode(t, errs[i], persist.CodeNotFound) // minted after the removal: refused
			continue
		}
		err := store.WithTx(ctx, func(tx *persist.Tx) error { _, _, err := tx.BotTokenAuthenticate(ctx, minted[i].Token); return err })
		requireErrCode(t, err, persist.CodeUnauthenticated) // minted before it: revoked with it
	}
}

// TestBotTokenUseRecordedToTheSecond: each authentication records its time, except one within a
// second of the time recorded, which leaves it (docs/bots.md).
func TestBotTokenUseRecordedToTheSecond(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := persisttest.NewClock()
	store := persisttest.NewStore(t, persisttest.WithClock(clock.Now))
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	bot, tok := persisttest.Bot(t, store, owner, w.ID, nil)
	recorded := func() time.Time {
		t.Helper()
		tokens, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.BotToken, error) {
			return tx.BotTokenList(ctx, persist.ActorFor(owner), w.ID, bot.ID)
		})
		require.NoError(t, err)
		require.Len(t, tokens, 1)
		require.NotNil(t, tokens[0].LastUsedAt)
		return *tokens[0].LastUsedAt
	}
	authenticate := func() persist.BotToken {
		t.Helper()
		got, _, err := store.BotTokenAuthenticate(ctx, tok.Token)
		require.NoError(t, err)
		return got
	}
	first := clock.Now()
	require.Equal(t, first, *authenticate().LastUsedAt)
	require.Equal(t, first, recorded())
	clock.Advance(999 * time.Millisecond)
	require.Equal(t, first, *authenticate().LastUsedAt, "within the second: left as it was")
	require.Equal(t, first, recorded())
	clock.Advance(time.Millisecond)
	require.Equal(t, clock.Now(), *authenticate().LastUsedAt)
	require.Equal(t, clock.Now(), recorded())
	clock.Advance(time.Hour)
	err := store.WithTx(ctx, func(tx *persist.Tx) error { _, _, err := tx.BotTokenAuthenticate(ctx, tok.Token); return err })
	require.NoError(t, err)
	require.Equal(t, clock.Now(), recorded(), "inside a transaction too")
}
