package persist_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

type batchOutcome struct {
	res persist.MessageCreated
	err error
}

// requireOneCreated checks that racing creates with one nonce all answered the same message and
// that exactly one of them created it (the others replayed it).
func requireOneCreated(t *testing.T, out []batchOutcome) {
	t.Helper()
	created := 0
	for _, o := range out {
		require.NoError(t, o.err)
		require.Equal(t, out[0].res.Message.ID, o.res.Message.ID)
		if !o.res.Replayed {
			created++
		}
	}
	require.Equal(t, 1, created)
}

// TestBatchGroupCommit: requests that arrive while a group is in flight share the next
// transaction and its one commit; a request refused by a guard, or failing after it wrote, sinks
// neither the others nor the sequence (channel_seq stays gapless, cursors dense, events in
// arrival order), and a nonce replayed inside the group finds the original of the same group.
func TestBatchGroupCommit(t *testing.T) {
	t.Parallel()
	var commits atomic.Int64
	store := persisttest.NewStore(t, persisttest.WithCommitHook(func([]string) { commits.Add(1) }))
	ctx := context.Background()
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	ch := persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, "general")
	stranger := persisttest.User(t, store, nil)
	place := persist.Place{ChannelID: ch.ID}
	actor := persist.ActorFor(owner)
	before := commits.Load()
	start, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.EventWindow, error) {
		return tx.EventWindowGet(ctx, w.ID)
	})
	require.NoError(t, err)

	post := func(who persist.Actor, body, nonce string) func(tx *persist.Tx) (persist.MessageCreated, error) {
		return func(tx *persist.Tx) (persist.MessageCreated, error) {
			return tx.MessageCreate(ctx, who, place, persist.MessageCreateParams{Body: body, Nonce: nonce})
		}
	}
	gate := make(chan struct{})
	var opened sync.Once
	open := func() { opened.Do(func() { close(gate) }) }
	defer open() // a failure below must not leave the first group waiting
	first := post(actor, "first", "")
	started := make(chan struct{})
	requests := []func(tx *persist.Tx) (persist.MessageCreated, error){
		// The first group: one request, held open until the others have queued behind it.
		func(tx *persist.Tx) (persist.MessageCreated, error) {
			res, err := first(tx)
			close(started)
			<-gate
			return res, err
		},
		post(actor, "second", "n-second"),
		// Wrote its message, then failed: its savepoint goes, with its sequence and event.
		func(tx *persist.Tx) (persist.MessageCreated, error) {
			if _, err := post(actor, "doomed", "")(tx); err != nil {
				return persist.MessageCreated{}, err
			}
			return persist.MessageCreated{}, errors.New("changed its mind")
		},
		post(persist.ActorFor(stranger), "not a member", ""),
		post(actor, "third", ""),
		post(actor, "second", "n-second"),
	}
	out := make([]batchOutcome, len(requests))
	var wg sync.WaitGroup
	for i, fn := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := persist.BatchInPlace(ctx, store, place, fn)
			out[i] = batchOutcome{res, err}
		}()
		if i == 0 {
			<-started
		} else {
			// Queue them one by one, so arrival order is the order above.
			require.Eventually(t, func() bool { return persist.BatchPending(store, w.ID) == i }, 10*time.Second, time.Millisecond)
		}
	}
	open()
	wg.Wait()

	require.Equal(t, int64(2), commits.Load()-before, "two groups, one commit each")
	for _, i := range []int{0, 1, 4} {
		require.NoError(t, out[i].err)
		require.False(t, out[i].res.Replayed)
	}
	require.Equal(t, []int64{1, 2, 3}, []int64{*out[0].res.Message.ChannelSeq, *out[1].res.Message.ChannelSeq, *out[4].res.Message.ChannelSeq})
	require.Equal(t, []int64{start.Head + 1, start.Head + 2, start.Head + 3},
		[]int64{out[0].res.Event.Cursor, out[1].res.Event.Cursor, out[4].res.Event.Cursor})
	require.ErrorContains(t, out[2].err, "changed its mind")
	requireCode(t, out[3].err, persist.CodeForbidden)
	require.NoError(t, out[5].err)
	require.True(t, out[5].res.Replayed)
	require.Equal(t, out[1].res.Message.ID, out[5].res.Message.ID)

	events, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Event, error) {
		return tx.EventListAfter(ctx, w.ID, start.Head, 100)
	})
	require.NoError(t, err)
	require.Len(t, events, 3)
	for i, want := range []persist.MessageCreated{out[0].res, out[1].res, out[4].res} {
		require.Equal(t, want.Event.Cursor, events[i].Cursor)
		require.Equal(t, want.Event.ID, events[i].ID)
		require.Equal(t, want.Message.ID, events[i].MessageID)
		require.JSONEq(t, string(want.Event.Payload), string(events[i].Payload))
	}
	win, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.EventWindow, error) {
		return tx.EventWindowGet(ctx, w.ID)
	})
	require.NoError(t, err)
	require.Equal(t, start.Head+3, win.Head)
	page, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Page, error) {
		return tx.MessageList(ctx, actor, place, persist.Window{Mode: persist.WindowEarliest, Limit: 10})
	})
	require.NoError(t, err)
	var bodies []string
	for _, m := range page.Messages {
		bodies = append(bodies, m.Body)
	}
	require.Equal(t, []string{"first", "second", "third"}, bodies)
}

// TestBatchConcurrentPosters: many posters through the group commit at once (half of them
// through BatchMessageCreate), every post answered with its own message, channel_seq 1..N without a gap and cursors dense.
func TestBatchConcurrentPosters(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	ch := persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, "general")
	place := persist.Place{ChannelID: ch.ID}
	const posters, each = 16, 20
	seqs := make(chan int64, posters*each)
	cursors := make(chan int64, posters*each)
	var wg sync.WaitGroup
	for p := 0; p < posters; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				var res persist.MessageCreated
				var err error
				if p%2 == 0 { // half through the group's one round trip for its posts
					res, err = persist.BatchMessageCreate(ctx, store, persist.ActorFor(owner), place,
						persist.MessageCreateParams{Body: "hello", Nonce: fmt.Sprintf("n-%d-%d", p, i)})
				} else {
					res, err = persist.BatchInPlace(ctx, store, place, func(tx *persist.Tx) (persist.MessageCreated, error) {
						return tx.MessageCreate(ctx, persist.ActorFor(owner), place, persist.MessageCreateParams{Body: "hello"})
					})
				}
				if !assertNoError(t, err) {
					return
				}
				seqs <- *res.Message.ChannelSeq
				cursors <- res.Event.Cursor
			}
		}()
	}
	wg.Wait()
	close(seqs)
	close(cursors)
	requireDense(t, seqs, 1, posters*each)
	win, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.EventWindow, error) {
		return tx.EventWindowGet(ctx, w.ID)
	})
	require.NoError(t, err)
	requireDense(t, cursors, win.Head-posters*each+1, posters*each)
	events, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Event, error) {
		return tx.EventListAfter(ctx, w.ID, win.Head-posters*each, 1000)
	})
	require.NoError(t, err)
	require.Len(t, events, posters*each)
	for i, e := range events {
		require.Equal(t, int64(i+1), *e.Seq, "events in channel_seq order")
	}
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// requireDense checks that the values are exactly from, from+1, … from+n-1.
func requireDense(t *testing.T, values chan int64, from int64, n int) {
	t.Helper()
	seen := map[int64]bool{}
	for v := range values {
		require.False(t, seen[v], "duplicate %d", v)
		seen[v] = true
		require.GreaterOrEqual(t, v, from)
		require.Less(t, v, from+int64(n))
	}
	require.Len(t, seen, n)
}

// BenchmarkBatchMessageCreate posts root messages into one channel through the group commit,
// GOMAXPROCS × -cpu posters at once; compare BenchmarkMessageCreateParallel, one transaction each.
// go test ./persist -run '^$' -bench 'BenchmarkBatchMessageCreate|BenchmarkMessageCreateParallel' -cpu 1,16 -benchtime 3000x
func BenchmarkBatchMessageCreate(b *testing.B) {
	store, actor, place, in := benchChannel(b)
	ctx := context.Background()
	b.ReportAllocs()
	defer reportProcessCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := persist.BatchMessageCreate(ctx, store, actor, place, in); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestNonceRaceAcrossTransactions: creates with one nonce racing in separate transactions (as
// from two replicas) make one message; the others wait on the unique index, are retried and
// replay it.
func TestNonceRaceAcrossTransactions(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	ch := persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, "general")
	place := persist.Place{ChannelID: ch.ID}
	out := make([]batchOutcome, 8)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := createMessage(ctx, store, persist.ActorFor(owner), place, persist.MessageCreateParams{Body: "retry", Nonce: "same"})
			out[i] = batchOutcome{res, err}
		}()
	}
	wg.Wait()
	requireOneCreated(t, out)
}

// TestBatchAnswersCarryLoggedCursors: replies (two events each) and reactions through the group
// commit, many at once: every event in every answer has the cursor the log gave it.
func TestBatchAnswersCarryLoggedCursors(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	ch := persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, "general")
	actor := persist.ActorFor(owner)
	root, err := createMessage(ctx, store, actor, persist.Place{ChannelID: ch.ID}, persist.MessageCreateParams{Body: "root"})
	require.NoError(t, err)
	answered := make(chan persist.Event, 100)
	var wg sync.WaitGroup
	for p := 0; p < 8; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				reply, err := persist.BatchOnMessage(ctx, store, root.Message.ID, func(tx *persist.Tx) (persist.ReplyCreated, error) {
					return tx.ThreadReplyCreate(ctx, actor, root.Message.ID, persist.MessageCreateParams{Body: "reply"})
				})
				if !assertNoError(t, err) {
					return
				}
				for _, e := range reply.Events {
					answered <- e
				}
				emoji := []string{"tada", "eyes", "rocket", "fire", "wave", "star", "bulb", "ok_hand"}[p]
				reaction, err := persist.BatchOnMessage(ctx, store, root.Message.ID, func(tx *persist.Tx) (persist.ReactionChange, error) {
					if i%2 == 0 {
						return tx.ReactionAdd(ctx, actor, root.Message.ID, emoji)
					}
					return tx.ReactionRemove(ctx, actor, root.Message.ID, emoji)
				})
				if !assertNoError(t, err) {
					return
				}
				answered <- reaction.Event
			}
		}()
	}
	wg.Wait()
	close(answered)
	events, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.Event, error) {
		return tx.EventListAfter(ctx, w.ID, root.Event.Cursor, 1000)
	})
	require.NoError(t, err)
	logged := map[string]int64{}
	for i, e := range events {
		require.Equal(t, root.Event.Cursor+int64(i)+1, e.Cursor, "dense")
		logged[e.ID] = e.Cursor
	}
	n := 0
	for e := range answered {
		n++
		require.NotZero(t, e.Cursor)
		require.Equal(t, logged[e.ID], e.Cursor, "%s %s", e.Type, e.ID)
	}
	require.Equal(t, 8*4*3, n)
	require.Len(t, events, n)
}

// TestBatchCancelledBeforeItsTurn: a request whose caller gives up while it waits for its group
// is skipped and answered with its caller's error; the group's other requests commit and the
// channel's sequence has no gap where it would have been.
func TestBatchCancelledBeforeItsTurn(t *testing.T) {
	t.Parallel()
	for _, together := range []bool{false, true} {
		t.Run(fmt.Sprintf("sent together %v", together), func(t *testing.T) {
			t.Parallel()
			testCancelledBeforeItsTurn(t, together)
		})
	}
}

func testCancelledBeforeItsTurn(t *testing.T, together bool) {
	store := persisttest.NewStore(t)
	ctx := context.Background()
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	actor := persist.ActorFor(owner)
	ch := persisttest.Channel(t, store, actor, w.ID, "general")
	place := persist.Place{ChannelID: ch.ID}
	post := func(ctx context.Context, body string) batchOutcome {
		if together {
			res, err := persist.BatchMessageCreate(ctx, store, actor, place, persist.MessageCreateParams{Body: body})
			return batchOutcome{res, err}
		}
		res, err := persist.BatchInPlace(ctx, store, place, func(tx *persist.Tx) (persist.MessageCreated, error) {
			return tx.MessageCreate(ctx, actor, place, persist.MessageCreateParams{Body: body})
		})
		return batchOutcome{res, err}
	}
	gate, started := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	out := make([]batchOutcome, 4)
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, err := persist.BatchInPlace(ctx, store, place, func(tx *persist.Tx) (persist.MessageCreated, error) {
			res, err := tx.MessageCreate(ctx, actor, place, persist.MessageCreateParams{Body: "holds the group"})
			close(started)
			<-gate
			return res, err
		})
		out[0] = batchOutcome{res, err}
	}()
	<-started
	gone, giveUp := context.WithCancel(ctx)
	for i, c := range []context.Context{ctx, gone, ctx} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i+1] = post(c, []string{"before", "gave up", "after"}[i])
		}()
		require.Eventually(t, func() bool { return persist.BatchPending(store, w.ID) == i+1 }, 10*time.Second, time.Millisecond)
	}
	giveUp()
	close(gate)
	wg.Wait()
	require.NoError(t, out[0].err)
	require.NoError(t, out[1].err)
	require.ErrorIs(t, out[2].err, context.Canceled)
	require.NoError(t, out[3].err)
	require.Equal(t, []int64{1, 2, 3},
		[]int64{*out[0].res.Message.ChannelSeq, *out[1].res.Message.ChannelSeq, *out[3].res.Message.ChannelSeq})
	require.Equal(t, out[1].res.Event.Cursor+1, out[3].res.Event.Cursor)
}
