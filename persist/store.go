package persist

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/natterchat/natter/migrations"
)

// Config configures a Store.
type Config struct {
	// URL is the pgx connection string. Required.
	URL string
	// MaxConns caps the pool. Default 16.
	MaxConns int32
	// Clock returns "now"; each transaction reads it once. Default time.Now.
	Clock func() time.Time
	// Logger receives pool-level problems. Default slog.Default().
	Logger *slog.Logger
	// OnEventsCommitted is called after a commit that appended events, with the workspaces they
	// belong to: the relay's wake-up, set with the other NATS hooks by streams.StoreConfig. It
	// must not block. Default: nothing.
	OnEventsCommitted func(workspaceIDs []string)
	// OnRevoked is called after a commit that ended sessions or bot tokens or changed
	// memberships (the realtime layer's cue to recheck). It must not block. Default: nothing.
	OnRevoked func([]Revocation)
}

// Store is the database. Its only entry points are WithTx and WithTxV: every query, reads
// included, is a method of the *Tx they hand out.
type Store struct {
	pool      *pgxpool.Pool
	clock     func() time.Time
	logger    *slog.Logger
	committed func(workspaceIDs []string)
	revoked   func([]Revocation)
	batches   batcher
	// handOff receives each group's committed events (HandOffEvents); nil when nobody takes them.
	handOff atomic.Pointer[func([]Event)]
	// revokedHere receive each commit's revocations first (ListenRevocations).
	listenersMu sync.Mutex
	revokedHere atomic.Pointer[[]*revocationListener]
	workspaces  workspaceCache // see workspaceKey
	// aheadSent and aheadMissed count the group requests that sent statements ahead, and those
	// of them that left that path and were run again (see sendAhead); aheadTogether the requests
	// sent in one round trip with others (sendGroupAhead).
	aheadSent, aheadMissed, aheadTogether atomic.Int64
}

// Open connects and checks the connection. It does not migrate; call Migrate.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.URL == "" {
		return nil, errors.New("persist: Config.URL is required")
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 16
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", redactURLError(err))
	}
	pc.MaxConns = cfg.MaxConns
	// Timestamps leave the database in UTC whatever the process's zone, so JSON shows them so.
	pc.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		c.TypeMap().RegisterType(&pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID,
			Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC}})
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return &Store{pool: pool, clock: cfg.Clock, logger: cfg.Logger, committed: cfg.OnEventsCommitted,
		revoked: cfg.OnRevoked}, nil
}

// redactURLError keeps a password in the URL out of logs: pgx quotes the string it failed on.
func redactURLError(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return errors.New("invalid connection string")
	}
	return err
}

// Close releases the pool.
func (s *Store) Close() { s.pool.Close() }

// Migrate applies pending migrations and returns the versions applied.
func (s *Store) Migrate(ctx context.Context) ([]int, error) { return migrations.Apply(ctx, s.pool) }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Now returns the store's clock reading, for callers that stamp values outside a transaction.
func (s *Store) Now() time.Time { return s.clock() }

// Reader runs the read-only statements of the store: the hot checks ReadV runs without a
// transaction, and, since Tx embeds it, the same reads inside one. It has no way to write, so a
// write inside ReadV does not compile. It carries the instant it began, taken once from the
// store's clock, so every row a transaction writes agrees on "now".
type Reader struct {
	q   querier // the transaction, or the pool itself for a ReadV
	now time.Time
}

// newTx wraps a transaction begun at now (Store.now); batch is the group commit's context, nil
// for one request.
func newTx(ptx pgx.Tx, now time.Time, batch context.Context) *Tx {
	tx := &Tx{tx: ptx, batch: batch}
	tx.Reader = Reader{q: txStatements{tx}, now: now}
	return tx
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
	// appended are a group's events with their cursors once its event statement has run, for
	// the relay's hand-off after commit (see Store.HandOffEvents).
	appended []Event
	// batch is set when the transaction is a group commit: its statements run under the
	// batch's context rather than the one a request passed in, so one request giving up does
	// not break the connection the others share, and savepoint is the statement to send ahead
	// of the next one (see Batch).
	batch     context.Context
	savepoint string
	// groupKey is the group's key (the workspace); ahead is what is left of the statements the
	// running request sent ahead, and noAhead says the request is run again without (see
	// sendAhead).
	groupKey  string
	ahead     []*aheadRow
	noAhead   bool
	sentAhead bool
	// savepointName is the running request's savepoint; strict says its statements were sent
	// with later requests' (any statement not sent ahead leaves the path); planned is what it
	// decided when they were (see sendGroupAhead).
	savepointName string
	strict        bool
	planned       any
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

// now is the store's clock as Postgres keeps time: UTC, to the microsecond.
func (s *Store) now() time.Time { return s.clock().UTC().Truncate(time.Microsecond) }

// relaxedCommit is a CTE for a single write statement run outside a transaction (poolReader)
// whose loss in a crash costs nothing but staleness: set_config(…, true) turns
// synchronous_commit off for the statement's own implicit transaction, whose commit comes after
// it, so that commit does not wait for the disk. The statement must read from "relaxed" for the
// CTE to be evaluated.
const relaxedCommit = `relaxed AS (SELECT set_config('synchronous_commit', 'off', true))`

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

// ListenRevocations makes fn receive, synchronously after each commit and before OnRevoked, what
// it ended or changed: the replica's own caches of sessions, tokens and memberships drop them
// before the request that made the change is answered (other replicas learn of it from OnRevoked's
// announcement). The returned function removes fn. fn must not block.
func (s *Store) ListenRevocations(fn func([]Revocation)) (remove func()) {
	l := &revocationListener{fn: fn}
	s.listenersMu.Lock()
	defer s.listenersMu.Unlock()
	s.setListenersLocked(append(slices.Clone(s.listeners()), l))
	return func() {
		s.listenersMu.Lock()
		defer s.listenersMu.Unlock()
		s.setListenersLocked(slices.DeleteFunc(slices.Clone(s.listeners()), func(o *revocationListener) bool { return o == l }))
	}
}

type revocationListener struct{ fn func([]Revocation) }

// listeners is read on every commit without a lock; it is replaced, never changed in place.
func (s *Store) listeners() []*revocationListener {
	if p := s.revokedHere.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *Store) setListenersLocked(ls []*revocationListener) { s.revokedHere.Store(&ls) }

func (s *Store) announceRevoked(rs []Revocation) {
	if len(rs) == 0 {
		return
	}
	for _, l := range s.listeners() {
		l.fn(rs)
	}
	if s.revoked != nil {
		s.revoked(rs)
	}
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
	ctx = tx.ctxFor(ctx)
	if err := tx.offPath(); err != nil {
		return pgconn.CommandTag{}, err
	}
	if tx.savepoint == "" {
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

func (tx *Reader) query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return tx.q.Query(ctx, sql, args...)
}

func (tx *Reader) queryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return tx.q.QueryRow(ctx, sql, args...)
}

// txStatements is the querier of a Tx's Reader: its reads run like its writes, under the group
// commit's context and behind a pending savepoint (see Batch).
type txStatements struct{ tx *Tx }

func (s txStatements) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	tx := s.tx
	ctx = tx.ctxFor(ctx)
	if err := tx.offPath(); err != nil {
		return nil, err
	}
	if tx.savepoint != "" {
		// Rows outlive this call, so the savepoint goes on its own rather than in a batch
		// whose results the caller would have to close.
		sp := tx.savepoint
		tx.savepoint = ""
		if _, err := tx.tx.Exec(ctx, sp); err != nil {
			return nil, err
		}
	}
	return tx.tx.Query(ctx, sql, args...)
}

func (s txStatements) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	tx := s.tx
	ctx = tx.ctxFor(ctx)
	if r, ok := tx.takeAhead(sql, args); ok {
		return r
	}
	if err := tx.offPath(); err != nil {
		return failedRow{err}
	}
	if tx.savepoint == "" {
		return tx.tx.QueryRow(ctx, sql, args...)
	}
	br, err := tx.sendWithSavepoint(ctx, sql, args)
	if err != nil {
		return failedRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

func (tx *Tx) ctxFor(ctx context.Context) context.Context {
	if tx.batch != nil {
		return tx.batch
	}
	return ctx
}

// sendWithSavepoint sends the pending savepoint and the statement in one round trip.
func (tx *Tx) sendWithSavepoint(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	b.Queue(tx.savepoint)
	b.Queue(sql, args...)
	tx.savepoint = ""
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
