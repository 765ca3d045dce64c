package persist

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// BatchPending is how many requests wait in key's group-commit queue, for tests that need a
// group to form deterministically.
func BatchPending(s *Store, key string) int {
	s.batches.mu.Lock()
	defer s.batches.mu.Unlock()
	if q := s.batches.queues[key]; q != nil {
		return len(q.pending)
	}
	return 0
}

// AheadStats is how many group requests sent statements ahead, how many of them left that path
// and were run again, and how many were sent in one round trip with others.
func AheadStats(s *Store) (sent, missed, together int64) {
	return s.aheadSent.Load(), s.aheadMissed.Load(), s.aheadTogether.Load()
}

// GroupTx is the transaction of a group commit, for its own tests.
type GroupTx = groupTx

// BeginGroupTx starts a group commit's transaction.
func BeginGroupTx(ctx context.Context, s *Store) (*GroupTx, error) { return s.beginGroupTx(ctx) }

// CommitWith runs sql and COMMIT in one round trip (groupTx.commitWith).
func (t *GroupTx) CommitWith(ctx context.Context, read func(pgx.Rows) error, sql string, args ...any) error {
	return t.commitWith(ctx, read, sql, args...)
}

// CountSettings counts the instance settings named key.
func CountSettings(ctx context.Context, tx *Reader, key string) (int, error) {
	var n int
	err := tx.queryRow(ctx, `SELECT count(*) FROM instance_settings WHERE key = $1`, key).Scan(&n)
	return n, err
}

// SearchShapes name each way Search reads, for tests that hold each to the same results.
// "walk-short" walks too few rows to find every match, then reads the indexes; "days" reads
// the index by day from one hour, widening, then the spans; "days-wide" reads searchDaysMax.
var SearchShapes = map[string]any{"index": searchForced{shape: searchIndex},
	"index-every-span": searchForced{shape: searchIndexEverySpan}, "walk": searchForced{shape: searchWalkAll},
	"walk-some": searchForced{shape: searchWalkSome}, "walk-short": searchForced{shape: searchWalkSome, budget: 3},
	"days": searchForced{shape: searchByDays, days: time.Hour}, "days-wide": searchForced{shape: searchByDays, days: searchDaysMax}}

// WithSearchShape makes Search read in the given shape (a value of SearchShapes).
func WithSearchShape(ctx context.Context, shape any) context.Context {
	return context.WithValue(ctx, searchShapeKey{}, shape.(searchForced))
}

// EmailSelects is emailSelects, the rule of missed-activity email for one reader.
func EmailSelects(m Message, handle string, follows bool) bool {
	return emailSelects(m, handle, follows)
}

// SearchByDays runs only the day index's reads of a search, from a first span: the ids of the
// page they found (newest first for sort=newest) and whether that was all the search needs.
func (tx *Tx) SearchByDays(ctx context.Context, actor Actor, p SearchParams, first time.Duration) ([]string, bool, error) {
	p, err := searchValidate(p)
	if err != nil {
		return nil, false, err
	}
	need := RelevanceWindow
	if p.Sort == SearchSortNewest {
		need = p.Limit + 1
	}
	found, done, _, err := tx.searchByDays(ctx, actor, false, p, nil, tx.now, need, first)
	var ids []string
	for _, r := range found.results {
		ids = append(ids, r.ID)
	}
	return ids, done, err
}

// Setting is the value of a server setting in one of the store's connections.
func Setting(ctx context.Context, tx *Reader, name string) (string, error) {
	var v string
	err := tx.queryRow(ctx, `SELECT current_setting($1)`, name).Scan(&v)
	return v, err
}
