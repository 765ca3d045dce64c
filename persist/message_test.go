package persist_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// botActor makes a service bot member of workspaceID and returns it as a bot-token actor
// holding scopes, the way bot-token requests will reach the store.
func botActor(t *testing.T, store *persist.Store, workspaceID string, scopes ...string) persist.Actor {
	t.Helper()
	bot := botUser(t, store, workspaceID, "")
	return persist.Actor{UserID: bot.ID, Kind: persist.KindBot, TokenWorkspaceID: workspaceID, Scopes: scopes}
}

func createMessage(ctx context.Context, store *persist.Store, actor persist.Actor, p persist.Place, in persist.MessageCreateParams) (persist.MessageCreated, error) {
	return persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.MessageCreated, error) {
		return tx.MessageCreate(ctx, actor, p, in)
	})
}

// TestMessageCreateAgentKinds: agent_commentary and agent_tool need a bot token holding
// agent_activity:write, in channels and in direct conversations.
func TestMessageCreateAgentKinds(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	ch := persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, "general")
	agent := botActor(t, store, w.ID, "messages:write", "dms:write", "agent_activity:write")
	plain := botActor(t, store, w.ID, "messages:write", "dms:write")
	dm := persisttest.DM(t, store, w.ID, owner.ID, agent.UserID, plain.UserID)

	for _, p := range []persist.Place{{ChannelID: ch.ID}, {DMID: dm}} {
		for _, kind := range []string{persist.MessageKindAgentCommentary, persist.MessageKindAgentTool} {
			res, err := createMessage(ctx, store, agent, p, persist.MessageCreateParams{Body: "working on it", Kind: kind})
			require.NoError(t, err)
			require.Equal(t, kind, res.Message.Kind)
			_, err = createMessage(ctx, store, plain, p, persist.MessageCreateParams{Body: "working on it", Kind: kind})
			requireCode(t, err, persist.CodeForbidden)
			_, err = createMessage(ctx, store, persist.ActorFor(owner), p, persist.MessageCreateParams{Body: "working on it", Kind: kind})
			requireCode(t, err, persist.CodeForbidden)
		}
		res, err := createMessage(ctx, store, plain, p, persist.MessageCreateParams{Body: "hello"})
		require.NoError(t, err)
		require.Equal(t, persist.MessageKindMessage, res.Message.Kind)
	}
}

// TestBotTokensNeedDMScopes: direct-conversation content needs dms:read to read and dms:write
// to write, whichever route reaches it (threads, reactions, message reads, search).
func TestBotTokensNeedDMScopes(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	reader := botActor(t, store, w.ID, "messages:read", "threads:read")
	writer := botActor(t, store, w.ID, "messages:write", "threads:write", "dms:read")
	dm := persisttest.DM(t, store, w.ID, owner.ID, reader.UserID, writer.UserID)
	res, err := createMessage(ctx, store, persist.ActorFor(owner), persist.Place{DMID: dm}, persist.MessageCreateParams{Body: "secret plans"})
	require.NoError(t, err)

	err = store.WithTx(ctx, func(tx *persist.Tx) error { _, err := tx.MessageGet(ctx, reader, res.Message.ID); return err })
	requireCode(t, err, persist.CodeMissingScope)
	err = store.WithTx(ctx, func(tx *persist.Tx) error {
		_, err := tx.ThreadGet(ctx, reader, res.Message.ID, persist.Window{})
		return err
	})
	requireCode(t, err, persist.CodeMissingScope)
	page, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.SearchPage, error) {
		return tx.Search(ctx, reader, persist.SearchParams{WorkspaceID: w.ID, Query: "plans"})
	})
	require.NoError(t, err)
	require.Empty(t, page.Results, "no DM results without dms:read")

	err = store.WithTx(ctx, func(tx *persist.Tx) error { _, err := tx.MessageGet(ctx, writer, res.Message.ID); return err })
	require.NoError(t, err)
	err = store.WithTx(ctx, func(tx *persist.Tx) error {
		_, err := tx.ThreadReplyCreate(ctx, writer, res.Message.ID, persist.MessageCreateParams{Body: "on it"})
		return err
	})
	requireCode(t, err, persist.CodeMissingScope)
	err = store.WithTx(ctx, func(tx *persist.Tx) error { _, err := tx.ReactionAdd(ctx, writer, res.Message.ID, "👍"); return err })
	requireCode(t, err, persist.CodeMissingScope)
}

// TestChannelListReadState: listings carry, per channel, its last sequence, the reader's receipt
// and the count of live messages by others after it.
func TestChannelListReadState(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	owner, alice := persisttest.User(t, store, nil), persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	persisttest.Member(t, store, w.ID, alice.ID, persist.RoleMember)
	busy := persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, "busy")
	persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, "quiet")
	for i := range 5 {
		author := owner
		if i == 0 {
			author = alice
		}
		_, err := createMessage(ctx, store, persist.ActorFor(author), persist.Place{ChannelID: busy.ID}, persist.MessageCreateParams{Body: fmt.Sprint(i)})
		require.NoError(t, err)
	}
	_, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Receipt, error) {
		return tx.ReadMark(ctx, persist.ActorFor(alice), persist.Place{ChannelID: busy.ID}, 2)
	})
	require.NoError(t, err)
	list, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Channel, error) {
		return tx.ChannelList(ctx, persist.ActorFor(alice), w.ID)
	})
	require.NoError(t, err)
	got := map[string]persist.ReadState{}
	for _, c := range list {
		got[c.Name] = persist.ReadState{LastSeq: c.LastSeq, LastReadSeq: *c.LastReadSeq, UnreadCount: *c.UnreadCount}
	}
	require.Equal(t, map[string]persist.ReadState{
		"busy":  {LastSeq: 5, LastReadSeq: 2, UnreadCount: 3},
		"quiet": {},
	}, got)
}

// benchChannel is the set-up of the message benchmarks: a fresh store with one channel, its
// owner as the poster, and a body of ordinary length.
func benchChannel(b *testing.B) (*persist.Store, persist.Actor, persist.Place, persist.MessageCreateParams) {
	b.Helper()
	store := persisttest.NewStore(b)
	owner := persisttest.User(b, store, nil)
	w := persisttest.Workspace(b, store, owner.ID)
	ch := persisttest.Channel(b, store, persist.ActorFor(owner), w.ID, "general")
	return store, persist.ActorFor(owner), persist.Place{ChannelID: ch.ID},
		persist.MessageCreateParams{Body: "a message of an ordinary length, with a few words to index for search"}
}

// BenchmarkMessageCreate posts root messages into one channel through the real store, one
// transaction each: the guards, the sequence, the insert and message.created.
// go test ./persist -run '^$' -bench BenchmarkMessageCreate -benchtime 3000x
func BenchmarkMessageCreate(b *testing.B) {
	store, actor, place, in := benchChannel(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := createMessage(ctx, store, actor, place, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMessageCreateParallel is BenchmarkMessageCreate with GOMAXPROCS × -cpu posters into
// the same channel: the contention of one channel's sequence row and one workspace's event head.
// go test ./persist -run '^$' -bench BenchmarkMessageCreateParallel -cpu 16 -benchtime 3000x
func BenchmarkMessageCreateParallel(b *testing.B) {
	store, actor, place, in := benchChannel(b)
	ctx := context.Background()
	b.ReportAllocs()
	defer reportProcessCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := createMessage(ctx, store, actor, place, in); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
