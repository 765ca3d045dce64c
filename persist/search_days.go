package persist

import (
	"context"
	"math"
	"time"
)

// A search by days reads messages_search_days_idx (migration 0036), whose keys are a word of a
// workspace on a UTC day: the entries of the few newest days its words' rate needs, and the rows
// of those days' matches only. A bot's flood of messages without the words is skipped, where
// the walk reads it row by row, and a word of middling frequency reads a month of its own
// entries, where messages_search_idx reads its entries in every workspace's whole history
// (docs/performance.md, "Search by day").

// searchDaysMax is the longest span one search reads by day, in widening reads of 4× the span
// of the first; past it, it reads messages_search_idx by spans.
const searchDaysMax = 128 * 24 * time.Hour

// searchDaySeconds is a day of search_days's keys: the epoch's days, UTC.
const searchDaySeconds = 24 * 60 * 60

// searchDaysFirst is the span before top a search reads first by day: twice the time in which
// matches spread evenly from oldest to top put need of them, or 0 when there is no such history
// to spread them over or the span would pass searchDaysMax (the spans are read instead). The
// read takes whole days: the days the span touches.
func searchDaysFirst(matches float64, oldest, top time.Time, need int) time.Duration {
	history := top.Sub(oldest)
	if oldest.IsZero() || history <= 0 || matches <= 0 {
		return 0
	}
	span := time.Duration(math.Ceil(2 * float64(need) * float64(history) / matches))
	if span > searchDaysMax {
		return 0
	}
	return max(span, time.Minute)
}

// searchWalkFirst reports whether a dense query walks its budget of newest rows before it reads
// by day: when the walk is at most twice the rows the first read by day is expected to take
// (the scope's estimated matches in the days of its first span, at least a day's), a row
// walked costing about half a row read through an index and sorted.
func searchWalkFirst(budget int, est *searchScopeEstimate, top time.Time, need int) bool {
	first := searchDaysFirst(est.matches, est.oldest, top, need)
	if !est.indexable || first == 0 {
		return true
	}
	days := max(first, 24*time.Hour)
	return float64(budget) <= 2*est.matches*float64(days)/float64(top.Sub(est.oldest))
}

// searchDaysCrowded reports whether the first read by day of a dense query would take more rows
// than walking on through a flood (searchWalkCap rows), a row read through the index and sorted
// costing about three walked: by the planner's estimate of the days' entries, which ANALYZE's
// statistics of the busiest keys (a common word's days) make close. A workspace writing tens of
// thousands of messages a day holds that many matches of a common word in today's entries
// alone: 50,000 of them took 67 ms to read by day, where the walk crosses a flood and finds its
// candidates at once below it (docs/performance.md, "Search by day").
func (tx *Tx) searchDaysCrowded(ctx context.Context, p SearchParams, days []int32) (bool, error) {
	rows, err := tx.searchEstimate(ctx, `SELECT 1 FROM messages m
		WHERE search_days(m.workspace_id, m.created_at, m.search) @@ search_days_query($1, $2::integer[], websearch_to_tsquery('english', $3::text))`,
		p.WorkspaceID, days, p.Query)
	return searchDaysCrowdedRows(rows), err
}

// searchDaysCrowdedRows is searchDaysCrowded's rule for the estimated rows of a read by day.
func searchDaysCrowdedRows(rows float64) bool { return 3*rows > searchWalkCap }

// searchDayList is the days search_days's keys name from since's to top's, newest first, and
// the day after top's: a message stamped by a clock a little ahead is found as the walk and the
// spans find it.
func searchDayList(since, top time.Time) []int32 {
	day := func(t time.Time) int32 { return int32(math.Floor(float64(t.Unix()) / searchDaySeconds)) }
	var out []int32
	for d := day(top) + 1; d >= day(since); d-- {
		out = append(out, d)
	}
	return out
}

// searchByDays reads the matches of the days of the first span before top, then of a span 4×
// as long, until it has need candidates or would read more than searchDaysMax. It returns what
// it found, whether that is all the search needs, and the time before top its days cover (the
// spans that follow begin past it). The newest matches of contiguous days up to top are the
// newest of all, so a read that finds its candidates has the same ones every other shape finds.
//
// A read is whole days, with no condition on created_at: given one, the planner intersects the
// day index with the block range index (messages_created_brin_idx), whose lossy pages make it
// check every row of them by computing search_days again (2.2 s for 11,611 rows at 1,000,000
// messages; docs/performance.md, "Search by day").
func (tx *Tx) searchByDays(ctx context.Context, actor Actor, guest bool, p SearchParams, after *searchCursor,
	top time.Time, need int, first time.Duration) (searchFound, bool, time.Duration, error) {
	var found searchFound
	var read time.Duration
	for span := first; span > 0 && span <= searchDaysMax; span *= 4 {
		days := searchDayList(top.Add(-span), top)
		if read > 0 && top.Sub(time.Unix(int64(days[len(days)-1])*searchDaySeconds, 0)) == read {
			continue // the same days as the last read
		}
		f, err := tx.searchRun(ctx, actor, guest, p, after, searchRead{days: days})
		if err != nil || f.candidates >= need {
			return f, err == nil, 0, err
		}
		found = f
		read = top.Sub(time.Unix(int64(days[len(days)-1])*searchDaySeconds, 0))
	}
	return found, false, read, nil
}
