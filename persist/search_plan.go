package persist

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// searchSpans are the spans of history a search reads in turn, newest first, until one holds
// its candidates; 0 is the whole history.
var searchSpans = []time.Duration{7 * 24 * time.Hour, 30 * 24 * time.Hour, 180 * 24 * time.Hour, 0}

// searchWalkRoots is the size, in root messages, up to which a search of the whole history walks
// the workspace's messages newest first rather than reading the full-text index.
const searchWalkRoots = 20000

// searchSmallWorkspace reports whether a workspace has at most searchWalkRoots root messages (its
// places' counters, summed), and the messages table's rows as the planner knows them. The
// full-text index holds every workspace's messages: a word common in the others makes reading
// it cost their matches too, while walking a small workspace's whole history costs at most its
// own rows.
func (tx *Tx) searchSmallWorkspace(ctx context.Context, workspaceID string) (bool, float64, error) {
	var roots int64
	var total float64
	err := tx.queryRow(ctx, `SELECT (SELECT coalesce(sum(last_seq), 0) FROM channels WHERE workspace_id = $1)
		+ (SELECT coalesce(sum(last_seq), 0) FROM dms WHERE workspace_id = $1),
		(SELECT reltuples FROM pg_class WHERE oid = 'messages'::regclass)`, workspaceID).Scan(&roots, &total)
	return roots <= searchWalkRoots, total, err
}

// searchShape is how a search reads: see Search.
type searchShape int

const (
	searchIndex          searchShape = iota // the full-text index, by spans of time
	searchWalkAll                           // the newest messages, until the candidates are found
	searchWalkSome                          // the same, over a bounded number of rows, then the index
	searchIndexEverySpan                    // searchIndex reading every span, estimates aside (tests)
	searchByDays                            // the day index (searchByDays), then the full-text index by spans
)

// searchShapeKey is a context key by which tests choose a search's shape (a searchForced), so
// that each shape is held to the same visibility rules and results (export_test.go).
type searchShapeKey struct{}

// searchForced is a shape a test chose; for searchWalkSome, budget is the rows walked before
// the index is read, and 0 walks searchWalkCap rows and keeps what they hold; days, when set,
// is the span searchByDays reads first.
type searchForced struct {
	shape  searchShape
	budget int
	days   time.Duration
}

// searchShapeFor chooses how a search reads (see Search), and for searchWalkSome how many rows.
func (tx *Tx) searchShapeFor(ctx context.Context, p SearchParams, need int) (searchShape, int, error) {
	small, total, err := tx.searchSmallWorkspace(ctx, p.WorkspaceID)
	if err != nil || small {
		return searchWalkAll, 0, err
	}
	matches, err := tx.searchEstimate(ctx, `SELECT 1 FROM messages m WHERE m.search @@ websearch_to_tsquery('english', $1::text)`, p.Query)
	if err != nil {
		return 0, 0, err
	}
	byDays, err := tx.searchReadableByDay(ctx, p)
	if err != nil {
		return 0, 0, err
	}
	if budget := searchWalkBound(need, total, matches, byDays); budget > 0 {
		return searchWalkSome, budget, nil
	}
	if !byDays {
		return searchIndex, 0, nil
	}
	return searchByDays, 0, nil
}

// searchReadableByDay is whether a search can read the day index (searchByDays): a search of
// the whole workspace whose query can be read from a full-text index (searchIndexable). The
// day index's keys are the workspace's, so a search of one channel would read every channel's
// matches of its days to keep its own: in the busiest of 1,000 channels, 4.5% of its
// workspace's messages, that read 38-42 ms where the channel's own walk through a flood read
// 26 ms (docs/performance.md, "Search by day").
func (tx *Tx) searchReadableByDay(ctx context.Context, p SearchParams) (bool, error) {
	if p.ChannelID != "" || p.DMID != "" {
		return false, nil
	}
	var indexable bool
	err := tx.queryRow(ctx, searchIndexable, p.Query).Scan(&indexable)
	return indexable, err
}

// searchIndexable is whether a query ($1) can be read from a full-text index: one that matches
// a message without words (only negations, say `-deploy`) makes GIN read every entry, so it is
// walked or read by spans, never by days.
const searchIndexable = `SELECT NOT (''::tsvector @@ websearch_to_tsquery('english', $1::text))`

// searchWalkCap is the most rows a search of a large workspace walks newest first before it
// reads the full-text index.
const searchWalkCap = 50000

// searchWalkBound is how many of the newest rows a search walks for need matches before it
// reads the full-text indexes, or 0 to read them at once; total is the table's rows and
// matches the planner's estimate of the query's matches among them (the full-text statistics
// of ANALYZE, per word and across the query's operators), and indexable whether the search can
// read the day index (searchReadableByDay).
//
// A query walks when the rows its density predicts (need ÷ its share of the table) are at most
// half of its matches. When it can be read by days, it walks twice the predicted rows: where
// this workspace's newest messages hold fewer matches than that (a bot's flood on top of its
// history), the day index skips the flood where the walk would read it row by row. Otherwise:
//
// The index costs at least an entry for each match of the query in the whole table, wherever
// in time it lies and whichever workspace holds it, and then the rows of the span's matches; a
// walk costs a row for each message it passes, and at 1,000,000 messages an estimated match
// read through the index cost about three walked rows (docs/performance.md, "Search under a
// flood"). So a query walks when the rows its density predicts (need ÷ its share of the table)
// are at most half of its matches, and it carries on, past what the density predicts, for twice
// as many rows as its matches (at most searchWalkCap): where this workspace's newest messages
// hold fewer matches than the table's share (a bot's flood on top of its history), the walk
// crosses them instead of reading a common word's entries across the history, and a walk that
// still falls short has cost less than the index it then reads.
func searchWalkBound(need int, total, matches float64, indexable bool) int {
	if total <= 0 || matches <= 0 {
		return 0
	}
	predicted := float64(need) * total / matches
	switch {
	case 2*predicted > min(matches, searchWalkCap):
		return 0
	case indexable:
		return int(math.Ceil(2 * predicted))
	}
	return int(min(2*matches, searchWalkCap))
}

// searchEstimate is the planner's estimate of the rows of a statement, one EXPLAIN away (about
// 0.3 ms).
func (tx *Tx) searchEstimate(ctx context.Context, sql string, args ...any) (float64, error) {
	var plan []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	var raw []byte
	if err := tx.queryRow(ctx, `EXPLAIN (FORMAT JSON) `+sql, args...).Scan(&raw); err != nil {
		return 0, err
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		return 0, err
	}
	return plan[0].Plan.Rows, nil
}

// searchScopeEstimate is what a search's days and spans are estimated from: the planner's
// estimate of the query's matches in its scope over all history, the scope's oldest live
// message, and whether the search can read the day index (searchReadableByDay).
type searchScopeEstimate struct {
	matches   float64
	oldest    time.Time
	indexable bool
}

// searchScopeFilter is the SQL condition of a search's workspace or narrowing conversation
// (message alias m) with the arguments after args.
func searchScopeFilter(p SearchParams, args []any) (string, []any) {
	switch {
	case p.ChannelID != "":
		return ` AND m.channel_id = $` + strconv.Itoa(len(args)+1), append(args, p.ChannelID)
	case p.DMID != "":
		return ` AND m.dm_id = $` + strconv.Itoa(len(args)+1), append(args, p.DMID)
	}
	return ``, args
}

// searchScope reads a search's searchScopeEstimate: one EXPLAIN, and one descent of the newest
// index of the workspace or channel (a conversation's history is taken as its workspace's).
func (tx *Tx) searchScope(ctx context.Context, p SearchParams) (*searchScopeEstimate, error) {
	scope, args := searchScopeFilter(p, []any{p.WorkspaceID, p.Query})
	matches, err := tx.searchEstimate(ctx, `SELECT 1 FROM messages m WHERE m.workspace_id = $1
		AND m.search @@ websearch_to_tsquery('english', $2::text)`+scope, args...)
	if err != nil {
		return nil, err
	}
	oldest := `SELECT min(created_at) FROM messages WHERE workspace_id = $1 AND deleted_at IS NULL`
	arg := p.WorkspaceID
	if p.ChannelID != "" {
		oldest, arg = `SELECT min(created_at) FROM messages WHERE channel_id = $1 AND deleted_at IS NULL`, p.ChannelID
	}
	var at *time.Time
	e := &searchScopeEstimate{matches: matches}
	if err := tx.queryRow(ctx, oldest, arg).Scan(&at); err != nil {
		return nil, err
	}
	if e.indexable, err = tx.searchReadableByDay(ctx, p); err != nil {
		return nil, err
	}
	if at != nil {
		e.oldest = *at
	}
	return e, nil
}

// searchSpanShort reports whether a search is expected to find fewer than need matches in its
// scope between since and top, by either of two estimates. The planner's (scope, span and
// words together, one EXPLAIN away) is the span's rows times the words' share of the whole
// table: rows that hold none of its words (a bot's flood) raise it as much as any. The span's
// share of the scope's matches by time (est.matches over the history from est.oldest to top)
// is the rate at which the words were written, which such rows leave alone. Taking the lower
// errs towards reading a wider span than needed, which costs the rows of its extra matches;
// the other way errs towards a statement read for nothing, which costs the whole statement
// again (docs/performance.md).
func (tx *Tx) searchSpanShort(ctx context.Context, p SearchParams, est *searchScopeEstimate, top, since time.Time, need int) (bool, error) {
	if searchSpanShortByTime(est.matches, est.oldest, top, since, need) {
		return true, nil
	}
	scope, args := searchScopeFilter(p, []any{p.WorkspaceID, since, p.Query})
	rows, err := tx.searchEstimate(ctx, `SELECT 1 FROM messages m WHERE m.workspace_id = $1
		AND m.created_at >= $2 AND m.search @@ websearch_to_tsquery('english', $3::text)`+scope, args...)
	return rows < float64(need), err
}

// searchSpanShortByTime reports whether matches spread evenly over the time from oldest to top
// put fewer than need of them after since.
func searchSpanShortByTime(matches float64, oldest, top, since time.Time, need int) bool {
	history := top.Sub(oldest)
	if oldest.IsZero() || history <= 0 || !since.After(oldest) {
		return false
	}
	return matches*float64(top.Sub(since))/float64(history) < float64(need)
}
