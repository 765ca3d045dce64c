package persist

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHighlightRanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, headline, snippet string
		want                    []Highlight
	}{
		{"None", "plain text", "plain text", []Highlight{}},
		{"One", "a \ue000match\ue001 here", "a match here", []Highlight{{2, 7}}},
		{"CodePointsNotBytes", "🚀é \ue000ünïcode\ue001 and \ue000x\ue001", "🚀é ünïcode and x", []Highlight{{3, 10}, {15, 16}}},
		{"Adjacent", "\ue000a\ue001\ue000b\ue001", "ab", []Highlight{{0, 1}, {1, 2}}},
		{"EmptyRangeDropped", "x\ue000\ue001y", "xy", []Highlight{}},
		{"UnbalancedStopIgnored", "x\ue001y", "xy", []Highlight{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			snippet, hs := highlightRanges(tc.headline)
			require.Equal(t, tc.snippet, snippet)
			require.Equal(t, tc.want, hs)
		})
	}
}

func TestSearchCursorIsBound(t *testing.T) {
	t.Parallel()
	p := SearchParams{WorkspaceID: "wsp_1", Query: "q", Sort: SearchSortRelevance}
	bound := searchFingerprint("usr_1", p)
	c := searchCursor{Bound: bound, Rank: 0.0607927, ID: "msg_1"}
	got, err := decodeSearchCursor(encodeSearchCursor(c), bound)
	require.NoError(t, err)
	require.Equal(t, c, got, "the rank survives the round trip exactly")
	other := p
	other.ChannelID = "chn_1"
	for _, b := range []string{searchFingerprint("usr_2", p), searchFingerprint("usr_1", other)} {
		_, err := decodeSearchCursor(encodeSearchCursor(c), b)
		require.Error(t, err)
	}
}

// TestSearchWalkBound pins when a large workspace's search walks its newest messages and how far
// (docs/performance.md, "Search under a flood"), with the bench's table of 1,043,849 messages
// and the planner's estimates of its words: a walk reads up to twice the query's matches in the
// table (what the index would cost), at most 50,000, and only when the rows the query's share
// of the table predicts are at most half of its matches.
func TestSearchWalkBound(t *testing.T) {
	t.Parallel()
	const table = 1043849
	for _, tc := range []struct {
		name    string
		need    int
		matches float64
		want    int
	}{
		{"a common word walks through a flood to the cap", 200, 711669, 50000},
		{"a common word's page, newest first", 31, 711669, 50000},
		{"two words walk to the cap", 200, 36534, 50000},
		{"a word of 2%", 200, 20877, 41754},
		{"a middling word reads the index", 200, 4800, 0},
		{"a word at the edge walks", 200, 20434, 40868},
		{"a word past the edge reads the index", 200, 20433, 0},
		{"no estimate reads the index", 200, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, searchWalkBound(tc.need, table, tc.matches))
		})
	}
	require.Zero(t, searchWalkBound(200, 0, 100), "an empty table's statistics")
}

// TestSearchSpanShortByTime pins the estimate by time: matches spread evenly over the scope's
// history, whatever else was written (a flood of other messages leaves it alone).
func TestSearchSpanShortByTime(t *testing.T) {
	t.Parallel()
	top := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	year := top.Add(-365 * 24 * time.Hour)
	days := func(n int) time.Time { return top.Add(-time.Duration(n) * 24 * time.Hour) }
	require.True(t, searchSpanShortByTime(4600, year, top, days(7), 200), "88 of a year's 4,600 in 7 days")
	require.False(t, searchSpanShortByTime(4600, year, top, days(30), 200), "378 in 30 days")
	require.False(t, searchSpanShortByTime(4600, days(5), top, days(7), 200), "a span older than the history holds all of it")
	require.False(t, searchSpanShortByTime(4600, time.Time{}, top, days(7), 200), "no history")
	require.True(t, searchSpanShortByTime(150, year, top, days(300), 200), "fewer matches than wanted in all")
}
