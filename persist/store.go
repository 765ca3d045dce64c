package persist

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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

// Store is the database: the pool, the clock, and the hooks called after a commit. Its entry
// points are listed in the package doc; every query, reads included, is a method of the *Tx or
// *Reader they hand out.
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
	// No statement here runs long enough to repay compiling it, and a statement the planner
	// overestimates past jit_above_cost spent 30-70 ms compiling 4 ms of work (a search by
	// days, docs/performance.md "Search by day"). A URL that sets jit (`?jit=on`, or in its
	// options) keeps its own.
	if _, set := pc.ConnConfig.RuntimeParams["jit"]; !set && !strings.Contains(pc.ConnConfig.RuntimeParams["options"], "jit") {
		pc.ConnConfig.RuntimeParams["jit"] = "off"
	}
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

// Migrations returns the schema files this binary embeds, in version order: what a backup's
// schema is checked against before it is restored.
func Migrations() ([]migrations.Migration, error) { return migrations.All() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Now returns the store's clock reading, for callers that stamp values outside a transaction.
func (s *Store) Now() time.Time { return s.clock() }

// now is the store's clock as Postgres keeps time: UTC, to the microsecond.
func (s *Store) now() time.Time { return s.clock().UTC().Truncate(time.Microsecond) }

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

// PoolStats is a reading of the connection pool, for metrics.
type PoolStats struct {
	Max, Open, Acquired, Idle int32
	// Acquires counts connections handed out; Waits the acquires that had to wait, for WaitTime
	// in all.
	Acquires, Waits int64
	WaitTime        time.Duration
}

// PoolStats reads the connection pool's counters.
func (s *Store) PoolStats() PoolStats {
	st := s.pool.Stat()
	return PoolStats{Max: st.MaxConns(), Open: st.TotalConns(), Acquired: st.AcquiredConns(), Idle: st.IdleConns(),
		Acquires: st.AcquireCount(), Waits: st.EmptyAcquireCount(), WaitTime: st.EmptyAcquireWaitTime()}
}
