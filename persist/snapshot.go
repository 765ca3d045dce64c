package persist

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Snapshot runs fn in one read-only REPEATABLE READ transaction, so every statement fn runs sees
// the database as it was at its first one: an export of a workspace that people keep writing to
// is still consistent (no reply without its root, no pin of a message posted later). Unlike
// WithTx, fn may do other I/O while it reads — an export writes its archive as it goes — because
// a read-only transaction is never retried: fn runs once. The transaction holds back vacuum for
// as long as it lasts, as pg_dump's does. A write inside fn fails (read-only transaction).
// Errors are translated.
func (s *Store) Snapshot(ctx context.Context, fn func(tx *Tx) error) error {
	ptx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return translate(fmt.Errorf("begin snapshot: %w", err))
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = ptx.Rollback(rctx)
	}()
	err = fn(newTx(ptx, s.now(), nil))
	// The database's errors are translated; fn's own (a writer's) pass as they are.
	var pe *pgconn.PgError
	if errors.As(err, &pe) || errors.Is(err, pgx.ErrNoRows) || Unreachable(err) {
		return translate(err)
	}
	return err
}
