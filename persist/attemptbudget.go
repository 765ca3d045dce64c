package persist

import (
	"context"
	"crypto/sha256"
	"time"
)

// Attempt budgets are fixed windows of attempts per key (a client address, an account
// identifier), kept in the database so that every replica spends from the same budget.

// AttemptTake records one attempt of key against budget in the window of the given length
// that is running now (a finished window starts afresh), and reports whether the attempt is
// within limit. It is one statement: concurrent attempts from any replica are counted exactly.
func (tx *Tx) AttemptTake(ctx context.Context, budget, key string, limit int, window time.Duration) (bool, error) {
	now := tx.now
	var n int
	err := tx.queryRow(ctx, `INSERT INTO attempt_budgets AS b (budget, key_hash, window_start, attempts)
		VALUES ($1, $2, $3, 1)
		ON CONFLICT (budget, key_hash) DO UPDATE SET
			window_start = CASE WHEN b.window_start <= $4 THEN $3 ELSE b.window_start END,
			attempts = CASE WHEN b.window_start <= $4 THEN 1 ELSE b.attempts + 1 END
		RETURNING attempts`, budget, attemptKey(key), now, now.Add(-window)).Scan(&n)
	return n <= limit, err
}

// AttemptGiveBack takes back one attempt of key from its running window, for an attempt that
// turned out not to count.
func (tx *Tx) AttemptGiveBack(ctx context.Context, budget, key string, window time.Duration) error {
	_, err := tx.exec(ctx, `UPDATE attempt_budgets SET attempts = attempts - 1
		WHERE budget = $1 AND key_hash = $2 AND attempts > 0 AND window_start > $3`,
		budget, attemptKey(key), tx.now.Add(-window))
	return err
}

// AttemptBudgetsPrune deletes the budget's finished windows and returns how many went.
func (tx *Tx) AttemptBudgetsPrune(ctx context.Context, budget string, window time.Duration) (int64, error) {
	tag, err := tx.exec(ctx, `DELETE FROM attempt_budgets WHERE budget = $1 AND window_start <= $2`, budget, tx.now.Add(-window))
	return tag.RowsAffected(), err
}

func attemptKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}
