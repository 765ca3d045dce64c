package persist

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// groupTx is the transaction of a group commit (see Batch). It sends its BEGIN with its first
// statements and its COMMIT with its last one, the group's events (commitWith), so a group of
// posts takes two round trips where pgx's transaction takes four: a group's round trips are
// what one workspace's posts wait for one after another. Otherwise it is a plain transaction on
// one connection of the pool, released when it ends. Not safe for concurrent use.
type groupTx struct {
	conn   *pgxpool.Conn
	begun  bool // BEGIN has been sent
	ended  bool // COMMIT or ROLLBACK has been answered; the connection is back in the pool
	nested int  // savepoints made by Begin, for their names
}

func (s *Store) beginGroupTx(ctx context.Context) (*groupTx, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	return &groupTx{conn: c}, nil
}

// begin sends BEGIN on its own, for a first statement that cannot carry it.
func (t *groupTx) begin(ctx context.Context) error {
	if t.ended {
		return pgx.ErrTxClosed
	}
	if t.begun {
		return nil
	}
	t.begun = true
	_, err := t.conn.Exec(ctx, "begin")
	return err
}

// SendBatch sends BEGIN in the same round trip as the batch when the transaction has not begun.
func (t *groupTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.ended {
		return failedBatch{pgx.ErrTxClosed}
	}
	if t.begun {
		return t.conn.SendBatch(ctx, b)
	}
	t.begun = true
	withBegin := &pgx.Batch{}
	withBegin.Queue("begin")
	withBegin.QueuedQueries = append(withBegin.QueuedQueries, b.QueuedQueries...)
	br := t.conn.SendBatch(ctx, withBegin)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return failedBatch{err}
	}
	return br
}

// commitWith runs a query and COMMIT in one round trip: read sees the query's rows, and the
// commit is sent only with it, so a query that fails leaves the transaction to be rolled back.
func (t *groupTx) commitWith(ctx context.Context, read func(pgx.Rows) error, sql string, args ...any) error {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	b.Queue("commit")
	br := t.SendBatch(ctx, b)
	rows, err := br.Query()
	if err == nil {
		err = read(rows) // it closes rows
	}
	if err != nil {
		_ = br.Close()
		return err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return t.committed(tag, err)
}

// Commit ends the transaction; one that never began has nothing to commit.
func (t *groupTx) Commit(ctx context.Context) error {
	if t.ended {
		return pgx.ErrTxClosed
	}
	if !t.begun {
		t.end()
		return nil
	}
	tag, err := t.conn.Exec(ctx, "commit")
	return t.committed(tag, err)
}

// committed settles the answer to COMMIT as pgx's own transaction does: a transaction that had
// failed answers ROLLBACK.
func (t *groupTx) committed(tag pgconn.CommandTag, err error) error {
	if err != nil {
		return fmt.Errorf("commit: %w", err) // Rollback still ends it and frees the connection
	}
	t.end()
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// Rollback ends the transaction unless it has ended; it is safe to defer.
func (t *groupTx) Rollback(ctx context.Context) error {
	if t.ended {
		return pgx.ErrTxClosed
	}
	var err error
	if t.begun {
		_, err = t.conn.Exec(ctx, "rollback")
	}
	t.end()
	return err
}

// end gives the connection back; the pool closes one left inside a transaction or busy.
func (t *groupTx) end() {
	t.ended = true
	t.conn.Release()
}

// Begin makes a savepoint, as a nested pgx transaction does.
func (t *groupTx) Begin(ctx context.Context) (pgx.Tx, error) {
	t.nested++
	sp := &groupSavepoint{groupTx: t, name: fmt.Sprintf("natter_group_sp_%d", t.nested)}
	if _, err := t.Exec(ctx, "SAVEPOINT "+sp.name); err != nil {
		return nil, err
	}
	return sp, nil
}

func (t *groupTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.begin(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.conn.Exec(ctx, sql, args...)
}

func (t *groupTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	return t.conn.Query(ctx, sql, args...)
}

func (t *groupTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.begin(ctx); err != nil {
		return failedRow{err}
	}
	return t.conn.QueryRow(ctx, sql, args...)
}

func (t *groupTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.begin(ctx); err != nil {
		return 0, err
	}
	return t.conn.CopyFrom(ctx, table, columns, src)
}

func (t *groupTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.conn.Conn().Prepare(ctx, name, sql)
}

// LargeObjects is not available in a group (nothing in Natter uses them).
func (t *groupTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

func (t *groupTx) Conn() *pgx.Conn { return t.conn.Conn() }

// groupSavepoint is a savepoint of a groupTx, as pgx's nested transaction.
type groupSavepoint struct {
	*groupTx
	name string
	done bool
}

func (s *groupSavepoint) Commit(ctx context.Context) error { return s.end(ctx, "RELEASE SAVEPOINT ") }

func (s *groupSavepoint) Rollback(ctx context.Context) error {
	return s.end(ctx, "ROLLBACK TO SAVEPOINT ")
}

// end releases or rolls back the savepoint, once.
func (s *groupSavepoint) end(ctx context.Context, verb string) error {
	if s.done {
		return pgx.ErrTxClosed
	}
	s.done = true
	_, err := s.groupTx.Exec(ctx, verb+s.name)
	return err
}

// failedBatch answers every result of a batch that could not be sent with its error.
type failedBatch struct{ err error }

func (f failedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, f.err }
func (f failedBatch) Query() (pgx.Rows, error)         { return nil, f.err }
func (f failedBatch) QueryRow() pgx.Row                { return failedRow(f) }
func (f failedBatch) Close() error                     { return f.err }
func (f failedBatch) Tx() pgx.Tx                       { return nil }

// txGroup is what the Tx of a group commit carries besides a plain transaction's state (see
// Batch). It is nil outside a group, so a plain transaction's statements go straight to pgx.
type txGroup struct {
	// ctx is the group's context: every statement runs under it rather than the one a request
	// passed in, so one request giving up does not break the connection the others share.
	ctx context.Context
	// key is the group's key (its workspace).
	key string
	// savepoint is the statement to send ahead of the running request's next one (see
	// sendWithSavepoint); savepointName is the running request's savepoint.
	savepoint, savepointName string
	// ahead is what is left of the statements the running request sent ahead; sentAhead says
	// it sent some, and noAhead that it is run again without (see sendAhead).
	ahead     []*aheadRow
	sentAhead bool
	noAhead   bool
	// strict says the running request's statements were sent with later requests' (any
	// statement not sent ahead leaves the path); planned is what it decided when they were (see
	// sendGroupAhead).
	strict  bool
	planned any
	// appended are the group's events with their cursors once its event statement has run, for
	// the relay's hand-off after commit (see Store.HandOffEvents).
	appended []Event
}

// groupExec is Tx.exec in a group: after the statements sent ahead, behind the pending
// savepoint.
func (tx *Tx) groupExec(sql string, args []any) (pgconn.CommandTag, error) {
	ctx := tx.group.ctx
	if err := tx.offPath(); err != nil {
		return pgconn.CommandTag{}, err
	}
	if tx.group.savepoint == "" {
		return tx.tx.Exec(ctx, sql, args...)
	}
	br, err := tx.sendWithSavepoint(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// groupStatements is the querier of a group's Tx: its reads run like its writes, under the
// group's context, answered from the statements sent ahead when they are next there, and
// behind a pending savepoint.
type groupStatements struct{ tx *Tx }

func (s groupStatements) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	tx := s.tx
	ctx := tx.group.ctx
	if err := tx.offPath(); err != nil {
		return nil, err
	}
	if sp := tx.group.savepoint; sp != "" {
		// Rows outlive this call, so the savepoint goes on its own rather than in a batch
		// whose results the caller would have to close.
		tx.group.savepoint = ""
		if _, err := tx.tx.Exec(ctx, sp); err != nil {
			return nil, err
		}
	}
	return tx.tx.Query(ctx, sql, args...)
}

func (s groupStatements) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	tx := s.tx
	ctx := tx.group.ctx
	if r, ok := tx.takeAhead(sql, args); ok {
		return r
	}
	if err := tx.offPath(); err != nil {
		return failedRow{err}
	}
	if tx.group.savepoint == "" {
		return tx.tx.QueryRow(ctx, sql, args...)
	}
	br, err := tx.sendWithSavepoint(ctx, sql, args)
	if err != nil {
		return failedRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

// sendWithSavepoint sends the pending savepoint and the statement in one round trip.
func (tx *Tx) sendWithSavepoint(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	b.Queue(tx.group.savepoint)
	b.Queue(sql, args...)
	tx.group.savepoint = ""
	br := tx.tx.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return nil, err
	}
	return br, nil
}

// batchRow is the row of a statement sent behind a savepoint; scanning it ends the batch.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// failedRow is the row of a statement whose savepoint failed.
type failedRow struct{ err error }

func (f failedRow) Scan(...any) error { return f.err }
