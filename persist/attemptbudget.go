package persist

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Attempt budgets are token buckets per key (a client address, an account identifier): a burst
// of limit attempts, refilled evenly, one each window/limit. They are kept in the database so
// that every replica spends from the same bucket. A bucket is stored as the time it is full
// again (full_at); every statement below is a single row operation, so concurrent attempts from
// any replica are counted exactly.

// AttemptTake takes one attempt from key's bucket of budget. It returns zero when the attempt
// was within the budget, and otherwise how long until the bucket holds one again; a refused
// attempt takes nothing.
func (tx *Tx) AttemptTake(ctx context.Context, budget, key string, limit int, window time.Duration) (time.Duration, error) {
	interval := window / time.Duration(limit)
	var ok bool
	err := tx.queryRow(ctx, `INSERT INTO attempt_budgets AS b (budget, key_hash, full_at)
		VALUES ($1, $2, $3::timestamptz + $4::bigint * interval '1 microsecond')
		ON CONFLICT (budget, key_hash) DO UPDATE
			SET full_at = GREATEST(b.full_at, $3::timestamptz) + $4::bigint * interval '1 microsecond'
			WHERE GREATEST(b.full_at, $3::timestamptz) + $4::bigint * interval '1 microsecond'
				<= $3::timestamptz + $5::bigint * interval '1 microsecond'
		RETURNING true`, budget, attemptKey(key), tx.now, interval.Microseconds(), window.Microseconds()).Scan(&ok)
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, err
	}
	// Refused: the bucket takes another attempt once full_at + interval is within a window.
	var fullAt time.Time
	if err := tx.queryRow(ctx, `SELECT full_at FROM attempt_budgets WHERE budget = $1 AND key_hash = $2`,
		budget, attemptKey(key)).Scan(&fullAt); err != nil {
		return 0, err
	}
	return max(fullAt.Add(interval-window).Sub(tx.now), time.Microsecond), nil
}

// AttemptGiveBack returns one attempt to key's bucket, for an attempt that turned out not to
// count.
func (tx *Tx) AttemptGiveBack(ctx context.Context, budget, key string, limit int, window time.Duration) error {
	interval := window / time.Duration(limit)
	_, err := tx.exec(ctx, `UPDATE attempt_budgets SET full_at = full_at - $3::bigint * interval '1 microsecond'
		WHERE budget = $1 AND key_hash = $2 AND full_at > $4`, budget, attemptKey(key), interval.Microseconds(), tx.now)
	return err
}

// AttemptBudgetsPrune deletes the budget's buckets that are full again and returns how many
// went.
func (tx *Tx) AttemptBudgetsPrune(ctx context.Context, budget string) (int64, error) {
	tag, err := tx.exec(ctx, `DELETE FROM attempt_budgets WHERE budget = $1 AND full_at <= $2`, budget, tx.now)
	return tag.RowsAffected(), err
}

func attemptKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}
