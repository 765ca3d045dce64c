package server_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestSearchRelevanceWindow pins the bound on a search's work (docs/messages.md, "Search"):
// relevance ranks the 200 newest matches, the pages of one search keep the candidates of its
// first page, and sort=newest reaches every match.
func TestSearchRelevanceWindow(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	c := newChat(t, h)
	actor := persist.ActorFor(c.alice.User)
	var ids []string // oldest first
	for i := range 205 {
		m, err := persist.WithTxV(t.Context(), h.Store, func(tx *persist.Tx) (persist.MessageCreated, error) {
			return tx.MessageCreate(t.Context(), actor, persist.Place{ChannelID: c.general.ID},
				persist.MessageCreateParams{Body: "window message " + string(rune('a'+i%26))})
		})
		require.NoError(t, err)
		ids = append(ids, m.Message.ID)
	}
	all := func(params url.Values, between func()) []string {
		var got []string
		seen := map[string]bool{}
		for {
			p := c.found(t, c.alice, params)
			for _, r := range p.Results {
				require.False(t, seen[r.ID], "a result appears once")
				seen[r.ID] = true
				got = append(got, r.ID)
			}
			if p.NextCursor == nil {
				return got
			}
			between()
			params.Set("cursor", *p.NextCursor)
		}
	}

	later := ""
	got := all(url.Values{"q": {"window"}, "limit": {"100"}}, func() {
		if later == "" {
			later = c.say(t, c.mod, channelMessages(c.general.ID), "window after the first page").ID
		}
	})
	require.Len(t, got, 200)
	require.ElementsMatch(t, ids[5:], got, "the 200 newest matches when the search began")
	require.NotContains(t, got, later, "a match posted after the first page is not among its candidates")

	got = all(url.Values{"q": {"window"}, "limit": {"100"}, "sort": {"newest"}}, func() {})
	require.Len(t, got, 206)
	require.Equal(t, later, got[0])
	require.Equal(t, ids[0], got[205], "newest first reaches the oldest match")

	fresh := c.found(t, c.alice, url.Values{"q": {"window"}, "limit": {"100"}})
	require.Contains(t, resultIDs(fresh), later, "a new search ranks the newest matches again")
}

// TestSearchReachesOldHistory pins that a search reads wider spans of history until it has its
// candidates: matches a year old are found beside last week's, in both orders and across pages.
func TestSearchReachesOldHistory(t *testing.T) {
	t.Parallel()
	clock := persisttest.NewClock()
	h := servertest.New(t, servertest.WithClock(clock))
	c := newChat(t, h)
	post := func(body string) string {
		m, err := persist.WithTxV(t.Context(), h.Store, func(tx *persist.Tx) (persist.MessageCreated, error) {
			return tx.MessageCreate(t.Context(), persist.ActorFor(c.alice.User), persist.Place{ChannelID: c.general.ID},
				persist.MessageCreateParams{Body: body})
		})
		require.NoError(t, err)
		return m.Message.ID
	}
	var want []string // oldest first
	for _, gap := range []time.Duration{0, 200 * 24 * time.Hour, 100 * 24 * time.Hour, 20 * 24 * time.Hour, 3 * 24 * time.Hour} {
		clock.Advance(gap)
		want = append(want, post("archaeology notes"))
		post("unrelated chatter")
	}
	clock.Advance(24 * time.Hour)
	c.alice = c.join(t, persist.RoleMember) // a session of today: the others expired meanwhile
	require.Equal(t, reversed(want), resultIDs(c.found(t, c.alice, url.Values{"q": {"archaeology"}, "sort": {"newest"}})))
	require.ElementsMatch(t, want, resultIDs(c.found(t, c.alice, url.Values{"q": {"archaeology"}})))

	var paged []string
	params := url.Values{"q": {"archaeology"}, "sort": {"newest"}, "limit": {"2"}}
	for {
		p := c.found(t, c.alice, params)
		paged = append(paged, resultIDs(p)...)
		if p.NextCursor == nil {
			break
		}
		params.Set("cursor", *p.NextCursor)
	}
	require.Equal(t, reversed(want), paged, "pages of two reach back a year")
}
