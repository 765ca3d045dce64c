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

// searchDaysMax is the most days one search reads by day, in widening reads of 4× as many days
// from the first; past it, it reads messages_search_idx by spans.
const searchDaysMax = 128

// searchDaySeconds is a day of search_days's keys: the epoch's days, UTC.
const searchDaySeconds = 24 * 60 * 60

// searchDaysFirst is how many days, ending with top's, a search reads first: twice the days in
// which matches spread evenly from oldest to top put need of them, at least one, or 0 when
// there is no such history to spread them over (the days are not read, the spans are).
func searchDaysFirst(matches float64, oldest, top time.Time, need int) int {
	history := top.Sub(oldest).Hours() / 24
	if oldest.IsZero() || history <= 0 || matches <= 0 {
		return 0
	}
	days := math.Ceil(2 * float64(need) * history / matches)
	if days > searchDaysMax {
		return 0
	}
	return max(1, int(days))
}

// searchDayList is the days search_days's keys name for the n days ending with top's, newest
// first, and the day after top's: a message stamped by a clock a little ahead is found as the
// walk and the spans find it.
func searchDayList(top time.Time, n int) []int32 {
	day := int32(math.Floor(float64(top.Unix()) / searchDaySeconds))
	out := make([]int32, 0, n+1)
	for d := day + 1; d > day-int32(n); d-- {
		out = append(out, d)
	}
	return out
}

// searchByDays reads the matches of the first days ending with top's, then of 4× as many, until
// it has need candidates or would read more than searchDaysMax days. It returns what it found,
// whether that is all the search needs, and the span before top it read (the spans that follow
// begin past it). The newest matches of contiguous days up to top are the newest of all, so a
// read that finds its candidates has the same ones every other shape finds.
func (tx *Tx) searchByDays(ctx context.Context, actor Actor, guest bool, p SearchParams, after *searchCursor,
	top time.Time, need, first int) (searchFound, bool, time.Duration, error) {
	var found searchFound
	var read int
	for n := first; n > 0 && n <= searchDaysMax; n *= 4 {
		f, err := tx.searchRun(ctx, actor, guest, p, after, searchRead{days: searchDayList(top, n)})
		if err != nil || f.candidates >= need {
			return f, err == nil, 0, err
		}
		found, read = f, n
	}
	// The days read end at the start of the oldest of them: a span shorter than that holds no
	// more than they did.
	if read == 0 {
		return found, false, 0, nil
	}
	oldest := time.Unix((int64(math.Floor(float64(top.Unix())/searchDaySeconds))-int64(read-1))*searchDaySeconds, 0)
	return found, false, top.Sub(oldest), nil
}
