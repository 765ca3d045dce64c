package persist_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestSearchByDaysQueries holds the day index (migration 0036) to what messages.search finds,
// for every form of query web search has: a phrase (its words in order, not merely both), a
// negation, either of two words, a word of an edited message (its new words, not its old ones),
// and only the workspace searched, over messages days apart (UTC days, some close to midnight)
// and a message stamped in the future of the search by a clock ahead. Only-negation queries,
// which no full-text index can narrow, are read the other ways and find the same.
func TestSearchByDaysQueries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := persisttest.NewClockAt(time.Date(2026, 11, 1, 23, 30, 0, 0, time.UTC))
	store := persisttest.NewStore(t, persisttest.WithClock(clock.Now))
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)
	other := persisttest.Workspace(t, store, owner.ID)
	general := persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, "general")
	elsewhere := persisttest.Channel(t, store, persist.ActorFor(owner), other.ID, "general")
	post := searchPoster(t, store)
	in := persist.Place{ChannelID: general.ID}
	random := persisttest.Channel(t, store, persist.ActorFor(owner), w.ID, "random")
	alone := persisttest.DM(t, store, w.ID, owner.ID)

	phrase := post(owner, in, "the deploy failed again")
	firstNote := post(owner, persist.Place{DMID: alone}, "notes to self")
	clock.Advance(time.Hour) // the next UTC day
	reversed := post(owner, in, "failed to deploy")
	clock.Advance(time.Minute)
	planned := post(owner, in, "rollback planned")
	clock.Advance(3 * 24 * time.Hour)
	withTapir := post(owner, in, "deploy the tapir")
	clock.Advance(time.Minute)
	twice := post(owner, in, "deploy failed twice")
	clock.Advance(time.Minute)
	again := post(owner, in, "rollback planned again")
	clock.Advance(time.Minute)
	noted := post(owner, persist.Place{DMID: alone}, "rollback notes")
	clock.Advance(time.Minute)
	elsewhereInW := post(owner, persist.Place{ChannelID: random.ID}, "rollback elsewhere")
	post(owner, persist.Place{ChannelID: elsewhere.ID}, "the deploy failed in another workspace")
	clock.Advance(9 * 24 * time.Hour)
	edited := post(owner, in, "a rollback, no release")
	_, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.MessageChanged, error) {
		return tx.MessageUpdate(ctx, persist.ActorFor(owner), edited, "deploy the release")
	})
	require.NoError(t, err)
	clock.Advance(time.Hour)
	plain := post(owner, in, "chatter about lunch")
	// A message of a server whose clock runs ahead, past midnight: the search's now is before it.
	clock.Advance(23 * time.Hour)
	ahead := post(owner, in, "rollback done")
	clock.Advance(-23 * time.Hour)

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{`"deploy failed"`, []string{phrase, twice}},
		{`deploy -tapir`, []string{phrase, reversed, twice, edited}},
		{`rollback`, []string{ahead, again, planned, noted, elsewhereInW}},
		{`-deploy`, []string{plain, ahead, again, planned, noted, elsewhereInW, firstNote}},
		{`tapir or release or twice`, []string{withTapir, twice, edited}},
	} {
		for _, shape := range []string{"walk", "index", "days", "days-wide", "walk-short"} {
			sctx := persist.WithSearchShape(ctx, persist.SearchShapes[shape])
			for _, sort := range []string{persist.SearchSortNewest, persist.SearchSortRelevance} {
				// Pages of one: a page newest first needs two candidates, which the days hold.
				p := persist.SearchParams{WorkspaceID: w.ID, Query: tc.query, Sort: sort, Limit: 1}
				var got []string
				for pages := 0; ; pages++ {
					require.Less(t, pages, 10, "%s, %s, %s: pages end", tc.query, shape, sort)
					page, err := persist.WithTxV(sctx, store, func(tx *persist.Tx) (persist.SearchPage, error) {
						return tx.Search(sctx, persist.ActorFor(owner), p)
					})
					require.NoError(t, err, "%s, %s", tc.query, shape)
					for _, r := range page.Results {
						got = append(got, r.ID)
					}
					if page.NextCursor == nil {
						break
					}
					p.Cursor = *page.NextCursor
				}
				require.ElementsMatch(t, tc.want, got, "%s, %s, %s", tc.query, shape, sort)
				require.Len(t, got, len(tc.want), "%s, %s, %s: each once", tc.query, shape, sort)
			}
		}
	}

	// The day index alone (no span after it to make up for a day it missed) finds a page newest
	// first, its two newest matches, within the days it reads: the keys search_days gives a
	// message and those search_days_query asks for agree, across midnight and for a message a
	// clock ahead stamped tomorrow.
	for _, tc := range []struct {
		query string
		first time.Duration
		want  []string
	}{
		{`"deploy failed"`, 16 * 24 * time.Hour, []string{twice, phrase}},
		{`deploy -tapir`, time.Hour, []string{edited, twice}},
		{`rollback`, time.Minute, []string{ahead, elsewhereInW}},
		{`tapir or release or twice`, 16 * 24 * time.Hour, []string{edited, twice}},
	} {
		ids, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]string, error) {
			p := persist.SearchParams{WorkspaceID: w.ID, Query: tc.query, Sort: persist.SearchSortNewest, Limit: 1}
			ids, done, err := tx.SearchByDays(ctx, persist.ActorFor(owner), p, tc.first)
			if err == nil && !done {
				return ids, fmt.Errorf("short: %v", ids)
			}
			return ids, err
		})
		require.NoError(t, err, tc.query)
		require.Equal(t, tc.want, ids, tc.query)
	}
}

// TestStoreConnectionsWithoutJIT pins JIT off in the store's connections unless the URL asks
// for it: the planner's estimate of a search by days is far above its rows, and compiling the
// statement cost 30-70 ms of a 4 ms search (docs/performance.md, "Search by day").
func TestStoreConnectionsWithoutJIT(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := persisttest.NewStore(t)
	jit, err := persist.ReadV(ctx, store, func(tx *persist.Reader) (string, error) { return persist.Setting(ctx, tx, "jit") })
	require.NoError(t, err)
	require.Equal(t, "off", jit)

	for _, param := range []string{"jit=on", "options=-c%20jit%3Don"} {
		url := persisttest.StoreURL(t, store)
		if strings.Contains(url, "?") {
			url += "&" + param
		} else {
			url += "?" + param
		}
		asked, err := persist.Open(ctx, persist.Config{URL: url})
		require.NoError(t, err)
		jit, err = persist.ReadV(ctx, asked, func(tx *persist.Reader) (string, error) { return persist.Setting(ctx, tx, "jit") })
		asked.Close()
		require.NoError(t, err)
		require.Equal(t, "on", jit, "a URL's own setting: %s", param)
	}
}
