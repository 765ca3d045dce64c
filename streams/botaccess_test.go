package streams_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
	"github.com/natterchat/natter/streams/streamstest"
)

// botBundle is one test's embedded NATS with a running relay and bot access, over a workspace
// with an owner, a member and a guest, #general, the guests' channel and a conversation between
// the owner and the guest.
type botBundle struct {
	emb                  *streams.Embedded
	nc                   *nats.Conn
	store                *persist.Store
	owner, member, guest persist.User
	ws                   persist.Workspace
	general, guestCh, dm string
}

func setupBots(t *testing.T, edit func(*streams.BotAccessConfig)) *botBundle {
	t.Helper()
	emb, nc := streamstest.Embedded(t)
	store := persisttest.NewStore(t, func(c *persist.Config) { *c = streams.StoreConfig(nc, *c) })
	logger := slog.New(slog.DiscardHandler)
	relay, err := streams.NewRelay(streams.RelayConfig{Store: store, NATS: nc, Logger: logger, PollInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	cfg := streams.BotAccessConfig{Store: store, Server: emb, NATS: nc, Logger: logger}
	if edit != nil {
		edit(&cfg)
	}
	bots, err := streams.NewBotAccess(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- relay.Run(ctx) }()
	go func() { done <- bots.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, <-done)
	})
	select {
	case <-bots.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("bot access did not start")
	}
	b := &botBundle{emb: emb, nc: nc, store: store, owner: persisttest.User(t, store, nil),
		member: persisttest.User(t, store, nil), guest: persisttest.User(t, store, nil)}
	b.ws = persisttest.Workspace(t, store, b.owner.ID)
	persisttest.Member(t, store, b.ws.ID, b.member.ID, persist.RoleMember)
	persisttest.Member(t, store, b.ws.ID, b.guest.ID, persist.RoleGuest)
	owner := persist.ActorFor(b.owner)
	b.guestCh = persisttest.Channel(t, store, owner, b.ws.ID, persist.GuestChannel).ID
	b.general = persisttest.Channel(t, store, owner, b.ws.ID, "general").ID
	b.dm = persisttest.DM(t, store, b.ws.ID, b.owner.ID, b.guest.ID)
	return b
}

// add appends an event as the owner and returns its cursor.
func (b *botBundle) add(t *testing.T, in persist.EventInput) int64 {
	t.Helper()
	ctx := context.Background()
	in.WorkspaceID, in.ActorID = b.ws.ID, b.owner.ID
	if in.Type == "" {
		in.Type = "message.created"
	}
	if in.Payload == nil {
		in.Payload = map[string]string{"body": "hello"}
	}
	ev, err := persist.WithTxV(ctx, b.store, func(tx *persist.Tx) (persist.Event, error) { return tx.EventAppend(ctx, in) })
	require.NoError(t, err)
	return ev.Cursor
}

// as runs fn in a transaction as the owner.
func (b *botBundle) as(t *testing.T, fn func(ctx context.Context, tx *persist.Tx, owner persist.Actor) error) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, b.store.WithTx(ctx, func(tx *persist.Tx) error { return fn(ctx, tx, persist.ActorFor(b.owner)) }))
}

func replayCursors(events []streamstest.Event) []string {
	out := []string{}
	for _, e := range events {
		out = append(out, e.Cursor)
	}
	return out
}

// connectBot connects to the bundle's embedded server as tok.
func (b *botBundle) connectBot(t *testing.T, tok persist.BotToken, reconnect bool) (*streamstest.Bot, error) {
	t.Helper()
	return streamstest.ConnectBot(t, b.emb.ClientURL(), tok, reconnect)
}

func TestBotAccess(t *testing.T) {
	t.Parallel()

	t.Run("ReadsItsPlacesAndNothingElse", func(t *testing.T) {
		t.Parallel()
		b := setupBots(t, nil)
		bot, tok := persisttest.Bot(t, b.store, b.owner, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		mine := persisttest.DM(t, b.store, b.ws.ID, b.owner.ID, bot.ID)
		b.add(t, persist.EventInput{DirectConversationID: b.dm}) // 3: the owner and the guest only
		b.add(t, persist.EventInput{DirectConversationID: mine}) // 4

		nb, err := b.connectBot(t, tok, false)
		require.NoError(t, err)
		page := nb.Replay(t, map[string]any{"include_tail": true})
		require.Equal(t, []string{"1", "2", "4"}, replayCursors(page.Events))
		require.Equal(t, "4", *page.TailCursor)
		require.ElementsMatch(t, []string{
			"natter.events." + b.ws.ID + ".ws.>", "natter.events." + b.ws.ID + ".ch.>", "natter.events." + b.ws.ID + ".dm." + mine + ".>",
			"natter.ephemeral." + b.ws.ID + ".ws.>", "natter.ephemeral." + b.ws.ID + ".ch.>", "natter.ephemeral." + b.ws.ID + ".dm." + mine + ".>",
		}, page.Subjects)

		nb.Subscribe(t, page.Subjects)
		b.add(t, persist.EventInput{DirectConversationID: b.dm})
		inChannel := b.add(t, persist.EventInput{ChannelID: b.general})
		inMine := b.add(t, persist.EventInput{DirectConversationID: mine})
		e, m := nb.NextAfter(t, 4)
		require.Equal(t, persist.FormatCursor(inChannel), e.Cursor, "the others' conversation never arrives")
		require.Equal(t, b.ws.ID+":"+e.Cursor, m.Header.Get("Nats-Msg-Id"), "the stream sequence is the cursor")
		e, _ = nb.NextAfter(t, inChannel)
		require.Equal(t, persist.FormatCursor(inMine), e.Cursor)

		// Anything wider or elsewhere is refused.
		for _, subject := range []string{"natter.events." + b.ws.ID + ".>", "natter.events." + b.ws.ID + ".dm." + b.dm + ".>",
			"natter.events.>", "_INBOX.>", "$JS.API.>"} {
			_, err := nb.NC.SubscribeSync(subject)
			require.NoError(t, err)
			nb.ExpectError(t, "Permissions Violation for Subscription")
		}
		for _, subject := range []string{"natter.events." + b.ws.ID + ".ch." + b.general + ".message.created", "$JS.API.INFO",
			streams.BotReplaySubject("btk_someone_else")} {
			require.NoError(t, nb.NC.Publish(subject, []byte(`{}`)))
			nb.ExpectError(t, "Permissions Violation for Publish")
		}
		log, err := persist.WithTxV(context.Background(), b.store, func(tx *persist.Tx) ([]persist.Event, error) {
			return tx.EventListAfter(context.Background(), b.ws.ID, 0, 100)
		})
		require.NoError(t, err)
		require.Len(t, log, 7, "nothing reached the log")
	})
	t.Run("ResumesFromACursor", func(t *testing.T) {
		t.Parallel()
		b := setupBots(t, nil)
		_, tok := persisttest.Bot(t, b.store, b.owner, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		for range 5 {
			b.add(t, persist.EventInput{ChannelID: b.general}) // 3-7
		}
		nb, err := b.connectBot(t, tok, false)
		require.NoError(t, err)
		page := nb.Replay(t, map[string]any{"after_cursor": "3", "limit": 2})
		require.Equal(t, []string{"4", "5"}, replayCursors(page.Events))
		require.True(t, page.HasMore)
		page = nb.Replay(t, map[string]any{"after_cursor": page.NextCursor})
		require.Equal(t, []string{"6", "7"}, replayCursors(page.Events))
		require.False(t, page.HasMore)
		require.Equal(t, "resync_required", nb.Replay(t, map[string]any{"after_cursor": "99"}).Code)
		require.Equal(t, "invalid_request", nb.Replay(t, map[string]any{"limit": 0}).Code)
		require.Empty(t, nb.Replay(t, map[string]any{"limit": 501}).Code, "above 500 reads as 500")
	})
	t.Run("OnlyLiveTokensWithRealtimeReadGetIn", func(t *testing.T) {
		t.Parallel()
		b := setupBots(t, nil)
		_, reader := persisttest.Bot(t, b.store, b.owner, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		_, blind := persisttest.Bot(t, b.store, b.owner, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"messages:read"}})
		revoked := persisttest.BotToken(t, b.store, b.owner, b.ws.ID, reader.BotUserID, "bot:read")
		b.as(t, func(ctx context.Context, tx *persist.Tx, owner persist.Actor) error {
			_, err := tx.BotTokenRevoke(ctx, owner, revoked.ID)
			return err
		})
		session := persisttest.Session(t, b.store, b.owner.ID)
		for _, tok := range []persist.BotToken{blind, revoked, {ID: "btk_x", Token: "ccb_unknown"}, {ID: "x", Token: session}} {
			_, err := b.connectBot(t, tok, false)
			require.True(t, errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization"), "%v", err)
		}
		_, err := nats.Connect(b.emb.ClientURL(), nats.NoReconnect())
		require.Error(t, err, "no credentials, no connection")
		_, err = b.connectBot(t, reader, false)
		require.NoError(t, err)
	})
	t.Run("CutOffOnRevocationRemovalAndDeletion", func(t *testing.T) {
		t.Parallel()
		// No periodic recheck runs within the test: each change's announcement cuts off at once.
		b := setupBots(t, func(c *streams.BotAccessConfig) { c.RevalidateInterval = time.Hour })
		connect := func() (persist.User, *streamstest.Bot) {
			bot, tok := persisttest.Bot(t, b.store, b.owner, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
			nb, err := b.connectBot(t, tok, false)
			require.NoError(t, err)
			nb.Replay(t, nil)
			return bot, nb
		}
		_, revokedBot := connect()
		b.as(t, func(ctx context.Context, tx *persist.Tx, owner persist.Actor) error {
			_, err := tx.BotTokenRevoke(ctx, owner, revokedBot.Token.ID)
			return err
		})
		revokedBot.ExpectClosed(t)

		removed, removedBot := connect()
		b.as(t, func(ctx context.Context, tx *persist.Tx, owner persist.Actor) error {
			return tx.BotMembershipRemove(ctx, owner, b.ws.ID, removed.ID)
		})
		removedBot.ExpectClosed(t)

		deleted, deletedBot := connect()
		b.as(t, func(ctx context.Context, tx *persist.Tx, owner persist.Actor) error {
			_, err := tx.BotDelete(ctx, owner, deleted.ID)
			return err
		})
		deletedBot.ExpectClosed(t)

		_, err := b.connectBot(t, revokedBot.Token, false)
		require.Error(t, err, "and cannot come back")
	})
	t.Run("ANewConversationReconnectsWithItsSubject", func(t *testing.T) {
		t.Parallel()
		b := setupBots(t, func(c *streams.BotAccessConfig) { c.RevalidateInterval = 20 * time.Millisecond })
		bot, tok := persisttest.Bot(t, b.store, b.owner, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		nb, err := b.connectBot(t, tok, true)
		require.NoError(t, err)
		require.Len(t, nb.Replay(t, nil).Subjects, 4)
		ctx := context.Background()
		dm, err := persist.WithTxV(ctx, b.store, func(tx *persist.Tx) (persist.DM, error) {
			d, _, err := tx.DMCreate(ctx, persist.ActorFor(b.member), b.ws.ID, []string{bot.ID})
			return d, err
		})
		require.NoError(t, err)
		select {
		case <-nb.Reconnected:
		case <-time.After(10 * time.Second):
			t.Fatalf("the bot was not reconnected")
		}
		page := nb.Replay(t, nil)
		require.Contains(t, page.Subjects, "natter.events."+b.ws.ID+".dm."+dm.ID+".>")
		nb.Subscribe(t, page.Subjects)
		var processed int64
		if n := len(page.Events); n > 0 {
			processed, _ = persist.ParseCursor(page.Events[n-1].Cursor)
		}
		b.add(t, persist.EventInput{DirectConversationID: dm.ID})
		e, _ := nb.NextAfter(t, processed)
		require.Equal(t, dm.ID, e.DirectConversationID)
	})
	t.Run("ConnectingCountsAsAUse", func(t *testing.T) {
		t.Parallel()
		b := setupBots(t, nil)
		bot, tok := persisttest.Bot(t, b.store, b.owner, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		_, err := b.connectBot(t, tok, false)
		require.NoError(t, err)
		var tokens []persist.BotToken
		b.as(t, func(ctx context.Context, tx *persist.Tx, owner persist.Actor) (err error) {
			tokens, err = tx.BotTokenList(ctx, owner, b.ws.ID, bot.ID)
			return err
		})
		require.NotNil(t, tokens[0].LastUsedAt)
	})
}
