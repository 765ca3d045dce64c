// Package persisttest gives each test a fresh, migrated database of its own, cloned from a
// template that is migrated once per schema, on NATTER_TEST_DATABASE_URL when set and otherwise
// on a private cluster shared by all test binaries of this user (pglocal, under the temp dir,
// left running between runs like a build cache). Only _test.go files import it.
package persisttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/natterchat/natter/migrations"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/pglocal"
)

// EnvURL names the variable that points tests at an existing server; its role must be allowed to
// create databases.
const EnvURL = "NATTER_TEST_DATABASE_URL"

var (
	baseOnce sync.Once
	baseURL  string
	template string
	baseErr  error
)

// ClusterDir is where the shared private test cluster lives.
func ClusterDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("natter-test-pg-%d", os.Geteuid()))
}

func setup() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	baseURL = os.Getenv(EnvURL)
	if baseURL == "" {
		c, err := pglocal.Open(ctx, pglocal.Config{Dir: ClusterDir(), MaxConnections: 500,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			baseErr = err
			return
		}
		baseURL = c.URL("postgres")
	}
	fp, err := migrations.Fingerprint()
	if err != nil {
		baseErr = err
		return
	}
	template = "natter_tpl_" + fp
	baseErr = ensureTemplate(ctx)
}

// ensureTemplate creates and migrates the template once per schema fingerprint. An advisory lock
// keeps parallel test binaries from racing; a template marked IS_TEMPLATE is complete.
func ensureTemplate(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, baseURL)
	if err != nil {
		return fmt.Errorf("connect to test postgres: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(7300441)`); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(7300441)`)
	var ready *bool
	err = conn.QueryRow(ctx, `SELECT datistemplate FROM pg_database WHERE datname = $1`, template).Scan(&ready)
	if err == nil && ready != nil && *ready {
		return nil
	}
	if err == nil {
		if _, err := conn.Exec(ctx, `DROP DATABASE `+pgx.Identifier{template}.Sanitize()+` WITH (FORCE)`); err != nil {
			return err
		}
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{template}.Sanitize()); err != nil {
		return err
	}
	store, err := persist.Open(ctx, persist.Config{URL: withDatabase(baseURL, template), MaxConns: 2})
	if err != nil {
		return err
	}
	_, err = store.Migrate(ctx)
	store.Close()
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{template}.Sanitize()+` IS_TEMPLATE true`)
	return err
}

// withDatabase swaps the database name of a connection URL.
func withDatabase(raw, db string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Path = "/" + db
	return u.String()
}

// URL creates a fresh migrated database for this test and returns its connection string. The
// database is dropped when the test ends.
func URL(t testing.TB) string {
	t.Helper()
	return newDatabase(t, true)
}

// EmptyURL creates a fresh database without natter's schema (from template0), dropped when the
// test ends: a restore's target.
func EmptyURL(t testing.TB) string {
	t.Helper()
	return newDatabase(t, false)
}

func newDatabase(t testing.TB, migrated bool) string {
	t.Helper()
	baseOnce.Do(setup)
	if baseErr != nil {
		t.Fatalf("test database: %v", baseErr)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "natter_test_" + hex.EncodeToString(b)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, baseURL)
	if err != nil {
		t.Fatalf("connect to test postgres: %v", err)
	}
	defer conn.Close(ctx)
	from := template
	if !migrated {
		from = "template0"
	}
	create := `CREATE DATABASE ` + pgx.Identifier{name}.Sanitize() + ` TEMPLATE ` + pgx.Identifier{from}.Sanitize()
	for attempt := 0; ; attempt++ {
		_, err = conn.Exec(ctx, create)
		var pe *pgconn.PgError
		// Two clones of one template at the same instant can collide; the next try succeeds.
		if err == nil || attempt == 20 || !errors.As(err, &pe) || !strings.Contains(pe.Message, "being accessed by other users") {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, baseURL)
		if err != nil {
			t.Errorf("drop test database: %v", err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	return withDatabase(baseURL, name)
}

// Option adjusts the store a test opens.
type Option func(*persist.Config)

// WithClock pins the store's clock.
func WithClock(clock func() time.Time) Option { return func(c *persist.Config) { c.Clock = clock } }

// WithCommitHook observes commits that appended events.
func WithCommitHook(fn func(workspaceIDs []string)) Option {
	return func(c *persist.Config) { c.OnEventsCommitted = fn }
}

// WithRevocationHook observes commits that ended credentials or changed memberships.
func WithRevocationHook(fn func([]persist.Revocation)) Option {
	return func(c *persist.Config) { c.OnRevoked = fn }
}

// NewStore opens a store on a fresh database for this test, closed when the test ends.
func NewStore(t testing.TB, opts ...Option) *persist.Store {
	t.Helper()
	cfg := persist.Config{URL: URL(t), MaxConns: 8, Logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg)
	}
	store, err := persist.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open test store: %v", err)
	}
	urls.Store(store, cfg.URL)
	t.Cleanup(func() {
		urls.Delete(store)
		store.Close()
	})
	return store
}

// ReachableTempDir is a temporary directory a private cluster's unprivileged user can enter (a
// test's own TempDir is private to root when tests run as root, which would send the cluster to
// the fallback under /var/lib/natter), removed when the test ends.
func ReachableTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "natter-test-")
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
