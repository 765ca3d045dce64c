package persist

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Transactions. Every statement of a resource file is a method of *Reader (reads) or *Tx
// (writes too), run through the primitives at the end of this file. How a Tx reaches the
// database is chosen by the entry point that made it (see the package doc): WithTx and WithTxV
// begin a plain pgx transaction, whose statements go straight to pgx; Batch and its kin run the
// request inside a group commit, whose Tx carries the group's state in Tx.group and sends its
// statements through grouptx.go; ReadV hands out a Reader on the pool, each statement its own
// implicit transaction.

// Reader runs the read-only statements of the store: the hot checks ReadV runs without a
// transaction, and, since Tx embeds it, the same reads inside one. It has no way to write, so a
// write inside ReadV does not compile. It carries the instant it began, taken once from the
// store's clock, so every row a transaction writes agrees on "now".
type Reader struct {
	q   querier // the transaction, the group's statements (groupStatements), or the pool for a ReadV
	now time.Time
}

// Now is the instant the reader (or the transaction) began.
func (tx *Reader) Now() time.Time { return tx.now }

// Tx is one database transaction: the Reader's reads, plus writes.
type Tx struct {
	Reader
	tx      pgx.Tx
	touched []string     // workspaces whose log this transaction appended to
	revoked []Revocation // credentials and memberships this transaction ended or changed
	// heads holds, per workspace whose event head this transaction has locked, the last cursor
	// it assigned; queued are the events waiting to be inserted just before commit (see
	// EventAppend).
	heads  map[string]int64
	queued []Event
	// group is the state of a request run in a group commit (see Batch, txGroup); nil in any
	// other transaction.
	group *txGroup
}

// newTx wraps a transaction begun at now (Store.now); group is set for a group commit's.
func newTx(ptx pgx.Tx, now time.Time, group *txGroup) *Tx {
	tx := &Tx{tx: ptx, group: group}
	tx.Reader = Reader{q: ptx, now: now}
	if group != nil {
		tx.Reader.q = groupStatements{tx}
	}
	return tx
}

// WithTx runs fn in a transaction and commits when fn returns nil. fn must do no network I/O
// besides the database, publish nothing and start no goroutine: it may run more than once, since
// serialization failures and deadlocks are retried. Errors are translated (see translate).
func (s *Store) WithTx(ctx context.Context, fn func(tx *Tx) error) error {
	_, err := WithTxV(ctx, s, func(tx *Tx) (struct{}, error) { return struct{}{}, fn(tx) })
	return err
}

// WithTxV is WithTx for a function that returns a value.
func WithTxV[T any](ctx context.Context, s *Store, fn func(tx *Tx) (T, error)) (T, error) {
	const attempts = 5
	var zero T
	for attempt := 1; ; attempt++ {
		v, err := runTx(ctx, s, fn)
		if err == nil {
			return v, nil
		}
		if attempt < attempts && retryable(err) {
			// A short random pause keeps two transactions that just deadlocked from meeting
			// again in the same order on their retry.
			select {
			case <-time.After(time.Duration(rand.IntN(4*attempt)+1) * time.Millisecond):
				continue
			case <-ctx.Done():
			}
		}
		return zero, translate(err)
	}
}

// querier is what a Reader runs statements on: its transaction, or the pool for a ReadV.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ReadV runs fn outside any transaction, each statement on its own on the pool: no BEGIN and
// no COMMIT, two round trips fewer than WithTxV. It is for the hot, read-only checks every
// request or socket handshake makes (resolving a session, a socket's membership), whose
// statements need no common snapshot; fn gets a Reader, which has no write methods. Errors are
// translated.
func ReadV[T any](ctx context.Context, s *Store, fn func(tx *Reader) (T, error)) (T, error) {
	v, err := fn(s.poolReader())
	if err != nil {
		var zero T
		return zero, translate(err)
	}
	return v, nil
}

// poolReader runs single statements straight on the pool, outside any transaction.
func (s *Store) poolReader() *Reader { return &Reader{q: s.pool, now: s.now()} }

func runTx[T any](ctx context.Context, s *Store, fn func(tx *Tx) (T, error)) (T, error) {
	var zero T
	ptx, err := s.pool.Begin(ctx)
	if err != nil {
		return zero, fmt.Errorf("begin: %w", err)
	}
	defer func() {
		// Roll back under a context that outlives a cancelled request, so the connection
		// returns to the pool clean.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = ptx.Rollback(rctx)
	}()
	tx := newTx(ptx, s.now(), nil)
	v, err := fn(tx)
	if err != nil {
		return zero, err
	}
	if err := tx.flushEvents(ctx); err != nil {
		return zero, err
	}
	if err := ptx.Commit(ctx); err != nil {
		return zero, fmt.Errorf("commit: %w", err)
	}
	if len(tx.touched) > 0 && s.committed != nil {
		s.committed(tx.touched)
	}
	s.announceRevoked(tx.revoked)
	return v, nil
}

// retryable reports the failures a transaction is run again for: a serialization failure, a
// deadlock, a create whose nonce a concurrent transaction committed first (the unique index
// made it wait and then refused it; run again, the create finds the original and replays it),
// and a failure before anything reached the database (a pooled connection found dead after a
// database restart: the retry takes a fresh one).
func retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01" ||
			pe.Code == "23505" && pe.ConstraintName == "messages_author_nonce_key"
	}
	return pgconn.SafeToRetry(err)
}

// exec, query and queryRow are the statement primitives; resource files use only these. Only a
// Tx has exec.
func (tx *Tx) exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if tx.group != nil {
		return tx.groupExec(sql, args)
	}
	return tx.tx.Exec(ctx, sql, args...)
}

func (tx *Reader) query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return tx.q.Query(ctx, sql, args...)
}

func (tx *Reader) queryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return tx.q.QueryRow(ctx, sql, args...)
}
