package persist_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestSearchUnderAFlood pins search in the case its bounded reads were tuned for: a workspace
// whose newest messages (a bot's stream) hold none of the searched word, above half a year of
// history that does. Every way a search reads (the index by spans, with and without the span
// estimates; the walk of the whole scope; the bounded walk, long enough or falling short inside
// the flood and then reading the indexes; the day index from one hour, widening, then the spans,
// and from its most days) finds every match the reader may see, each once: sort=
// newest in newest-first order, relevance in the same order whichever shape read it; pages of
// two reach the oldest match, and messages posted between pages change none of them. The
// newest matches are in a private channel the reader is not in and in a conversation of
// others: they are not found, nor do they stop a read short.
func TestSearchUnderAFlood(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := persisttest.NewClock()
	store := persisttest.NewStore(t, persisttest.WithClock(clock.Now))
	owner := persisttest.User(t, store, nil)
	alice := persisttest.User(t, store, nil)
	bob := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	persisttest.Member(t, store, w.ID, alice.ID, persist.RoleMember)
	persisttest.Member(t, store, w.ID, bob.ID, persist.RoleMember)
	general := persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, "general")
	secret := privateChannel(t, store, owner, w.ID, "secret")
	ownerAlice := persisttest.DM(t, store, w.ID, owner.ID, alice.ID)
	ownerBob := persisttest.DM(t, store, w.ID, owner.ID, bob.ID)
	post := searchPoster(t, store)

	// Half a year of history: a match every 15 days, in general or in alice's conversation,
	// among other chatter; one match deleted.
	var want []string // alice's matches, oldest first
	for i := range 12 {
		clock.Advance(15 * 24 * time.Hour)
		if i%3 == 2 {
			want = append(want, post(owner, persist.Place{DMID: ownerAlice}, fmt.Sprintf("the tapir notes, part %d", i)))
		} else {
			want = append(want, post(bob, persist.Place{ChannelID: general.ID}, fmt.Sprintf("tapir sighting %d near the river and the tapir pond", i)))
		}
		post(alice, persist.Place{ChannelID: general.ID}, "unrelated chatter about lunch")
	}
	gone := post(bob, persist.Place{ChannelID: general.ID}, "tapir typo")
	_, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.MessageChanged, error) {
		return tx.MessageDelete(ctx, persist.ActorFor(bob), gone)
	})
	require.NoError(t, err)
	// The last day: matches alice may not read, then the flood, the newest of all.
	clock.Advance(24 * time.Hour)
	post(owner, persist.Place{ChannelID: secret.ID}, "tapir in the secret room")
	post(owner, persist.Place{DMID: ownerBob}, "tapir between owner and bob")
	flood := func(n int) {
		for i := range n {
			clock.Advance(time.Second)
			post(owner, persist.Place{ChannelID: general.ID}, fmt.Sprintf("heartbeat ok from host %d", i))
		}
	}
	flood(40)

	newestFirst := slices.Clone(want)
	slices.Reverse(newestFirst)
	var relevance []string // as the first shape read it; every other must agree
	for _, shape := range []string{"index-every-span", "index", "walk", "walk-some", "walk-short", "days", "days-wide"} {
		for _, sort := range []string{persist.SearchSortNewest, persist.SearchSortRelevance} {
			sctx := persist.WithSearchShape(ctx, persist.SearchShapes[shape])
			p := persist.SearchParams{WorkspaceID: w.ID, Query: "tapir", Sort: sort, Limit: 2}
			var got []string
			late := ""
			for pages := 0; ; pages++ {
				require.Less(t, pages, 10, "%s, %s: pages end", shape, sort)
				page, err := persist.WithTxV(sctx, store, func(tx *persist.Tx) (persist.SearchPage, error) {
					return tx.Search(sctx, persist.ActorFor(alice), p)
				})
				require.NoError(t, err, "%s, %s", shape, sort)
				for _, r := range page.Results {
					got = append(got, r.ID)
				}
				if page.NextCursor == nil {
					break
				}
				if pages == 0 {
					// More of the flood, and a match alice may read, after the first page.
					late = post(owner, persist.Place{ChannelID: general.ID}, "a tapir after the first page")
					flood(3)
				}
				p.Cursor = *page.NextCursor
			}
			require.NotEmpty(t, late, "%s, %s: more than one page", shape, sort)
			// Gone before the next search, whose matches are the same as this one's.
			_, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.MessageChanged, error) {
				return tx.MessageDelete(ctx, persist.ActorFor(owner), late)
			})
			require.NoError(t, err)
			switch sort {
			case persist.SearchSortNewest:
				require.Equal(t, newestFirst, got, "%s: every match, newest first", shape)
			case persist.SearchSortRelevance:
				require.ElementsMatch(t, want, got, "%s: every match", shape)
				require.Len(t, got, len(want), "%s: each once", shape)
				if relevance == nil {
					relevance = got
				}
				require.Equal(t, relevance, got, "%s: the order of index-every-span", shape)
			}
		}
	}
}
