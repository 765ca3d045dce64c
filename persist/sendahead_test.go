package persist_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// inOneGroup runs every post in one group transaction of workspace key: a first post holds the
// group before it open until the others have queued behind it in order.
func inOneGroup(t *testing.T, store *persist.Store, key string, place persist.Place, first persist.Actor,
	posts []func() batchOutcome) []batchOutcome {
	t.Helper()
	ctx := context.Background()
	gate, started := make(chan struct{}), make(chan struct{})
	var opened sync.Once
	open := func() { opened.Do(func() { close(gate) }) }
	defer open()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := persist.BatchInPlace(ctx, store, place, func(tx *persist.Tx) (persist.MessageCreated, error) {
			res, err := tx.MessageCreate(ctx, first, place, persist.MessageCreateParams{Body: "holds the group"})
			close(started)
			<-gate
			return res, err
		})
		assertNoError(t, err)
	}()
	<-started
	out := make([]batchOutcome, len(posts))
	for i, post := range posts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = post()
		}()
		require.Eventually(t, func() bool { return persist.BatchPending(store, key) == i+1 }, 10*time.Second, time.Millisecond)
	}
	open()
	wg.Wait()
	return out
}

// TestBatchPostsSentAhead: a post of a group sends its statements in one round trip and is
// answered from them; posts that leave that path (a stranger, a guest's budget, a replayed
// nonce) get exactly the answers they get one statement at a time, and the group's sequence
// stays gapless around them.
func TestBatchPostsSentAhead(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"each post sends its own", "the group sends its posts' together"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testPostsSentAhead(t, mode != "each post sends its own")
		})
	}
}

func testPostsSentAhead(t *testing.T, together bool) {
	store := persisttest.NewStore(t)
	ctx := context.Background()
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	actor := persist.ActorFor(owner)
	ch := persisttest.Channel(t, store, actor, w.ID, "general")
	guestCh := persisttest.Channel(t, store, actor, w.ID, persist.GuestChannel)
	guest := persisttest.User(t, store, nil)
	persisttest.Member(t, store, w.ID, guest.ID, persist.RoleGuest)
	stranger := persisttest.User(t, store, nil)
	bot, _ := persisttest.Bot(t, store, owner, w.ID, &persisttest.BotOpts{UserBot: true})
	botActor := persist.Actor{UserID: bot.ID, Kind: bot.Kind, OwnerUserID: owner.ID, TokenWorkspaceID: w.ID}

	post := func(who persist.Actor, p persist.Place, body, nonce string) func() batchOutcome {
		in := persist.MessageCreateParams{Body: body, Nonce: nonce}
		return func() batchOutcome {
			if together {
				res, err := persist.BatchMessageCreate(ctx, store, who, p, in)
				return batchOutcome{res, err}
			}
			res, err := persist.BatchInPlace(ctx, store, p, func(tx *persist.Tx) (persist.MessageCreated, error) {
				return tx.MessageCreate(ctx, who, p, in)
			})
			return batchOutcome{res, err}
		}
	}
	general := persist.Place{ChannelID: ch.ID}

	// Four posts that every guard admits: when the group sends them together, one round trip.
	_, _, together0 := persist.AheadStats(store)
	out := inOneGroup(t, store, w.ID, general, actor, []func() batchOutcome{
		post(actor, general, "a", ""), post(actor, general, "b", ""), post(botActor, general, "c", ""), post(actor, general, "d", "n-d"),
	})
	for i, o := range out {
		require.NoError(t, o.err)
		require.Equal(t, int64(i+2), *o.res.Message.ChannelSeq)
	}
	_, missed, sentTogether := persist.AheadStats(store)
	require.Zero(t, missed)
	if together {
		require.Equal(t, int64(4), sentTogether-together0)
	} else {
		require.Zero(t, sentTogether-together0)
	}

	sent0, missed0, _ := persist.AheadStats(store)
	out = inOneGroup(t, store, w.ID, general, actor, []func() batchOutcome{
		post(actor, general, "one", "n-one"),
		post(persist.ActorFor(stranger), general, "not a member", ""),
		post(botActor, general, "from the bot", ""),
		post(actor, general, "one", "n-one"),
		post(actor, general, "another body", "n-one"),
		post(persist.ActorFor(guest), general, "guest outside the guest channel", ""),
		post(actor, general, "two", ""),
	})
	sent, missed, _ := persist.AheadStats(store)
	require.NoError(t, out[0].err)
	requireCode(t, out[1].err, persist.CodeForbidden)
	require.NoError(t, out[2].err)
	require.Equal(t, bot.ID, out[2].res.Message.AuthorID)
	require.NoError(t, out[3].err)
	require.True(t, out[3].res.Replayed)
	require.Equal(t, out[0].res.Message.ID, out[3].res.Message.ID)
	requireCode(t, out[4].err, persist.CodeConflict)
	requireCode(t, out[5].err, persist.CodeNotFound)
	require.NoError(t, out[6].err)
	// The post holding the group is 6; the admitted ones follow without a gap.
	require.Equal(t, []int64{7, 8, 9}, []int64{*out[0].res.Message.ChannelSeq, *out[2].res.Message.ChannelSeq, *out[6].res.Message.ChannelSeq})
	require.Equal(t, []int64{out[0].res.Event.Cursor + 1, out[0].res.Event.Cursor + 2},
		[]int64{out[2].res.Event.Cursor, out[6].res.Event.Cursor})
	// Every post went ahead, the one holding the group included; the admitted ones were
	// answered from what came back; the stranger and the replay of n-one left the path and ran again;
	// the reuse of n-one and the guest were refused on the rows read ahead.
	require.Equal(t, int64(8), sent-sent0)
	require.Equal(t, int64(2), missed-missed0)

	// A guest's three posts a day hold inside one group: each spends the budget on its own
	// path, the fourth is refused.
	guestPlace := persist.Place{ChannelID: guestCh.ID}
	g := persist.ActorFor(guest)
	out = inOneGroup(t, store, w.ID, guestPlace, actor, []func() batchOutcome{
		post(g, guestPlace, "g1", ""), post(g, guestPlace, "g2", ""), post(g, guestPlace, "g3", ""), post(g, guestPlace, "g4", ""),
	})
	for i := range 3 {
		require.NoError(t, out[i].err)
		require.Equal(t, int64(i+2), *out[i].res.Message.ChannelSeq)
	}
	requireCode(t, out[3].err, persist.CodeRateLimited)

	// Posts to a direct conversation go ahead too; a member of the workspace who is not in the
	// conversation is refused on the rows read ahead.
	other := persisttest.User(t, store, nil)
	persisttest.Member(t, store, w.ID, other.ID, persist.RoleMember)
	outsider := persisttest.User(t, store, nil)
	persisttest.Member(t, store, w.ID, outsider.ID, persist.RoleMember)
	dm := persist.Place{DMID: persisttest.DM(t, store, w.ID, owner.ID, other.ID)}
	_, missed0, together0 = persist.AheadStats(store)
	out = inOneGroup(t, store, w.ID, dm, actor, []func() batchOutcome{
		post(persist.ActorFor(other), dm, "hi", ""), post(persist.ActorFor(outsider), dm, "let me in", ""),
		post(actor, dm, "hello", "n-dm"),
	})
	require.NoError(t, out[0].err)
	requireCode(t, out[1].err, persist.CodeNotFound)
	require.NoError(t, out[2].err)
	require.Equal(t, []int64{2, 3}, []int64{*out[0].res.Message.ChannelSeq, *out[2].res.Message.ChannelSeq})
	_, missed, sentTogether = persist.AheadStats(store)
	require.Equal(t, missed0, missed)
	if together {
		// The three together; the refusal undid the one sent after it, which went again alone.
		require.Equal(t, int64(3), sentTogether-together0)
	}
}

// TestNonceRaceAcrossGroups: posts with one nonce through the group commits of two replicas at
// once (two stores on one database) make one message; the others, in either replica's group,
// replay it.
func TestNonceRaceAcrossGroups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := persisttest.URL(t)
	open := func() *persist.Store {
		s, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 8, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		t.Cleanup(s.Close)
		return s
	}
	replicas := []*persist.Store{open(), open()}
	owner := persisttest.User(t, replicas[0], nil)
	w := persisttest.Workspace(t, replicas[0], owner.ID)
	ch := persisttest.Channel(t, replicas[0], persist.ActorFor(owner), w.ID, "general")
	place := persist.Place{ChannelID: ch.ID}
	out := make([]batchOutcome, 16)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := persist.BatchMessageCreate(ctx, replicas[i%2], persist.ActorFor(owner), place,
				persist.MessageCreateParams{Body: "once", Nonce: "same"})
			out[i] = batchOutcome{res, err}
		}()
	}
	wg.Wait()
	requireOneCreated(t, out)
	require.Equal(t, int64(1), *out[0].res.Message.ChannelSeq)
}
