// Package migrations owns the database schema: append-only NNNN_name.sql files, embedded in the
// binary and applied in order, each in one transaction with its version row, under an advisory
// lock so that replicas starting together apply each file once. It imports no project package.
package migrations

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed *.sql
var files embed.FS

// lockKey is the advisory lock that serialises schema changes across replicas ("natter-mg").
const lockKey int64 = 0x6e61747465726d67

// ErrSchemaNewer is returned by Apply when the database holds a migration this binary does not
// embed: it was migrated by a newer natter.
var ErrSchemaNewer = errors.New("the database schema is newer than this binary")

// Migration is one schema file.
type Migration struct {
	Version  int
	Name     string // file name
	SQL      string
	Checksum string // hex SHA-256 of SQL
}

// All returns the embedded migrations in version order. It fails on a misnamed file or a
// repeated version, so a bad file stops start-up rather than being skipped.
func All() ([]Migration, error) {
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		return nil, err
	}
	out := make([]Migration, 0, len(names))
	seen := map[int]string{}
	for _, name := range names {
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || len(num) != 4 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", name)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", other, name, v)
		}
		seen[v] = name
		body, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(body)
		out = append(out, Migration{Version: v, Name: name, SQL: string(body), Checksum: hex.EncodeToString(sum[:])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Apply brings the database up to date and returns the versions it applied. An applied file whose
// checksum differs from the embedded one is an error: released migrations are never edited.
func Apply(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire connection: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockKey); err != nil {
		return nil, fmt.Errorf("take migration lock: %w", err)
	}
	defer func() {
		unlockCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = conn.Exec(unlockCtx, `SELECT pg_advisory_unlock($1)`, lockKey)
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		checksum   text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	applied := map[int]string{}
	var unknown []string
	known := map[int]bool{}
	for _, m := range all {
		known[m.Version] = true
	}
	rows, err := conn.Query(ctx, `SELECT version, name, checksum FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	for rows.Next() {
		var v int
		var name, sum string
		if err := rows.Scan(&v, &name, &sum); err != nil {
			return nil, fmt.Errorf("read schema_migrations: %w", err)
		}
		applied[v] = sum
		if !known[v] {
			unknown = append(unknown, name)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	if len(unknown) > 0 {
		// A binary older than the schema would serve with code that does not know its tables
		// (a downgrade): refuse before anything runs.
		latest := "none"
		if len(all) > 0 {
			latest = all[len(all)-1].Name
		}
		return nil, fmt.Errorf("%w: the database has migration %s, which this binary does not know (its latest is %s); "+
			"run a natter built with it, or restore the database from before the upgrade", ErrSchemaNewer,
			strings.Join(unknown, ", "), latest)
	}
	var done []int
	for _, m := range all {
		if sum, ok := applied[m.Version]; ok {
			if sum != m.Checksum {
				return done, fmt.Errorf("migration %s was changed after it was applied: migrations are append-only, add a new file instead", m.Name)
			}
			continue
		}
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)`,
				m.Version, m.Name, m.Checksum)
			return err
		}); err != nil {
			return done, fmt.Errorf("apply %s: %w", m.Name, err)
		}
		done = append(done, m.Version)
	}
	return done, nil
}

// Fingerprint identifies the whole embedded schema; tests key their template database by it.
func Fingerprint() (string, error) {
	all, err := All()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, m := range all {
		h.Write([]byte(m.Checksum))
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
