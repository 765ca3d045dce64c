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
// (docs/performance.md, "Search by day"), with the bench's table of 1,043,849 messages and the
// planner's estimates of its words: a query walks only when the rows its share of the table
// predicts are at most half of its matches; one the day index can read walks twice the
// predicted rows (then reads the days), one it cannot (only negations) up to twice its matches
// in the table (what the index would cost), at most 50,000.
func TestSearchWalkBound(t *testing.T) {
	t.Parallel()
	const table = 1043849
	for _, tc := range []struct {
		name      string
		need      int
		matches   float64
		indexable bool
		want      int
	}{
		{"a common word walks twice its predicted rows", 200, 711669, true, 587},
		{"a common word's page, newest first", 31, 711669, true, 91},
		{"two words", 200, 36534, true, 11429},
		{"a word of 2%", 200, 20877, true, 20000},
		{"a word at the edge walks", 200, 20434, true, 20434},
		{"a word past the edge reads the index", 200, 20433, true, 0},
		{"a middling word reads the index", 200, 4800, true, 0},
		{"negations walk through a flood to the cap", 200, 711669, false, 50000},
		{"negations of 2%", 200, 20877, false, 41754},
		{"no estimate reads the index", 200, 0, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, searchWalkBound(tc.need, table, tc.matches, tc.indexable))
		})
	}
	require.Zero(t, searchWalkBound(200, 0, 100, true), "an empty table's statistics")
}

// TestSearchDaysFirst pins the span a search reads first by day: twice the time its scope's
// estimated matches, spread evenly over its history, take to give the candidates.
func TestSearchDaysFirst(t *testing.T) {
	t.Parallel()
	top := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	days := func(n int) time.Time { return top.Add(-time.Duration(n) * 24 * time.Hour) }
	span := func(d time.Duration) time.Duration { return d.Round(time.Minute) }
	require.Equal(t, 761*time.Hour+44*time.Minute, span(searchDaysFirst(4600, days(365), top, 200)), "a middling word: a year's 4,600, 200 wanted: 31.7 days")
	require.Equal(t, 4*time.Hour+55*time.Minute, span(searchDaysFirst(711669, days(365), top, 200)), "a common word: 4.9 hours")
	require.Equal(t, 46*time.Minute, span(searchDaysFirst(711669, days(365), top, 31)), "a page newest first")
	require.Equal(t, time.Minute, searchDaysFirst(1e9, days(365), top, 31), "at least a minute")
	require.Zero(t, searchDaysFirst(500, days(365), top, 200), "a rare word: more than 128 days, the spans")
	require.Zero(t, searchDaysFirst(4600, time.Time{}, top, 200), "no history")
	require.Zero(t, searchDaysFirst(0, days(365), top, 200), "no estimate")
}

// TestSearchWalkFirst pins when a dense query walks before it reads by day, with the bench's
// estimates over a year: a common word walks its 587 rows (its first day holds 1,950 matches),
// two words read their first 4 days (400 matches) rather than walk 11,429 rows.
func TestSearchWalkFirst(t *testing.T) {
	t.Parallel()
	top := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	year := &searchScopeEstimate{oldest: top.Add(-365 * 24 * time.Hour), indexable: true}
	common, two := *year, *year
	common.matches, two.matches = 711669, 36534
	require.True(t, searchWalkFirst(587, &common, top, 200), "a common word")
	require.False(t, searchWalkFirst(11429, &two, top, 200), "two words")
	require.True(t, searchWalkFirst(800, &two, top, 200), "a walk of twice the days' rows")
	require.False(t, searchWalkFirst(801, &two, top, 200), "a walk of more")
	negated := two
	negated.indexable = false
	require.True(t, searchWalkFirst(11429, &negated, top, 200), "no reading by day")
}

// TestSearchDaysCrowded pins when a dense query's first days hold too many of its matches to
// read by day: more than a third of the 50,000 rows the walk may cross instead.
func TestSearchDaysCrowded(t *testing.T) {
	t.Parallel()
	require.False(t, searchDaysCrowdedRows(1500), "a day of a common word in a year of 1,000,000 messages")
	require.False(t, searchDaysCrowdedRows(16666))
	require.True(t, searchDaysCrowdedRows(16667))
	require.True(t, searchDaysCrowdedRows(50000), "a busy workspace's day")
}

// TestSearchDayList pins the UTC days a span names (20,784 for 2026-11-27), with the next day
// for a clock a little ahead.
func TestSearchDayList(t *testing.T) {
	t.Parallel()
	top := time.Date(2026, 11, 27, 23, 59, 0, 0, time.FixedZone("EST", -5*3600))
	require.Equal(t, []int32{20786, 20785}, searchDayList(top.Add(-time.Hour), top), "23:59 EST is 04:59 UTC of the 28th")
	require.Equal(t, []int32{20786, 20785, 20784}, searchDayList(top.Add(-5*time.Hour), top), "18:59 EST is 23:59 UTC of the 27th")
	midnight := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	require.Equal(t, []int32{20785, 20784, 20783}, searchDayList(midnight.Add(-time.Minute), midnight))
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
