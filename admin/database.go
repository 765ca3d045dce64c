package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/pglocal"
)

// databaseName is the database natter uses inside its private cluster.
const databaseName = "natter"

func dataDirFlag() cli.Flag {
	return &cli.StringFlag{Name: "data-dir", EnvVars: []string{"NATTER_DATA_DIR"}, Value: "./data",
		Usage: "directory for the private PostgreSQL cluster (used when --database-url is empty), the embedded NATS store and uploads"}
}

func databaseURLFlag() cli.Flag {
	return &cli.StringFlag{Name: "database-url", EnvVars: []string{"NATTER_DATABASE_URL"},
		Usage: "PostgreSQL connection URL; empty runs a private cluster under --data-dir from the local PostgreSQL server binaries"}
}

// database is an open store plus whatever it took to open it.
type database struct {
	Store   *persist.Store
	URL     string // the database's connection string
	cluster *pglocal.Cluster
	// Applied are the migrations this open applied.
	Applied []int
}

// Close closes the store and stops the private cluster if this process started it.
func (d *database) Close(ctx context.Context) error {
	d.Store.Close()
	if d.cluster != nil {
		return d.cluster.Stop(ctx)
	}
	return nil
}

// openDatabase opens --database-url, or the private cluster under --data-dir (starting it
// unless a running `natter dev` already has), and applies pending migrations. Only a server
// (create) makes a private cluster where none is: an operator command pointed at the wrong
// directory must not answer from a new, empty database.
func openDatabase(ctx context.Context, c *cli.Context, logger *slog.Logger, cfg persist.Config, create bool) (*database, error) {
	d := &database{}
	var err error
	cfg.Logger = logger
	if cfg.URL, d.cluster, err = locateDatabase(ctx, c, logger, create); err != nil {
		return nil, err
	}
	store, err := persist.Open(ctx, cfg)
	if err != nil {
		if d.cluster != nil {
			_ = d.cluster.Stop(ctx)
		}
		return nil, err
	}
	d.Store, d.URL = store, cfg.URL
	applied, err := store.Migrate(ctx)
	if err != nil {
		_ = d.Close(ctx)
		return nil, fmt.Errorf("migrate: %w", err)
	}
	d.Applied = append([]int{}, applied...)
	if len(applied) > 0 {
		logger.Info("migrations applied", "versions", applied)
	}
	return d, nil
}

// locateDatabase returns the connection string of --database-url, or of the private cluster
// under --data-dir, started unless it runs already (cluster is then non-nil: stop it when done).
// Only create makes a private cluster where none is.
func locateDatabase(ctx context.Context, c *cli.Context, logger *slog.Logger, create bool) (url string, cluster *pglocal.Cluster, err error) {
	url = c.String("database-url")
	if err := checkDatabaseURL(url); err != nil {
		return "", nil, err
	}
	if url != "" {
		return url, nil, nil
	}
	dir := c.String("data-dir")
	if !create && !hasPrivateCluster(dir) {
		return "", nil, fmt.Errorf("no natter database in --data-dir %s: pass --data-dir of the server's data "+
			"directory (where `natter dev` or `natter serve` keeps it), or --database-url", dir)
	}
	cluster, err = pglocal.Open(ctx, pglocal.Config{Dir: filepath.Join(dir, "pg"), MustExist: !create,
		Durable: true, MaxConnections: 200, Logger: logger})
	if err != nil {
		return "", nil, privateClusterError(err)
	}
	if err := ensureDatabase(ctx, cluster.URL("postgres"), databaseName); err != nil {
		_ = cluster.Stop(ctx)
		return "", nil, err
	}
	return cluster.URL(databaseName), cluster, nil
}

// checkDatabaseURL refuses a --database-url that is not PostgreSQL's (a mysql:// URL, a typo) or
// does not parse, without repeating it: it may hold a password.
func checkDatabaseURL(u string) error {
	if u == "" {
		return nil
	}
	if scheme, _, ok := strings.Cut(u, "://"); ok && scheme != "postgres" && scheme != "postgresql" {
		return configError("database-url", "a %s:// URL; natter needs PostgreSQL: postgres://user:password@host:5432/database", scheme)
	}
	if _, err := pgconn.ParseConfig(u); err != nil {
		return configError("database-url", "does not parse as a PostgreSQL URL (postgres://user:password@host:5432/database)")
	}
	return nil
}

// hasPrivateCluster reports whether a server made its private cluster under dataDir: the
// cluster's directory, or the marker naming where it lives when the postgres user could not
// enter dataDir (see pglocal.Open).
func hasPrivateCluster(dataDir string) bool {
	for _, name := range []string{"pg", "pg.location"} {
		if _, err := os.Stat(filepath.Join(dataDir, name)); err == nil {
			return true
		}
	}
	return false
}

// ensureDatabase creates db in the cluster on first use.
func ensureDatabase(ctx context.Context, adminURL, db string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to private postgres: %w", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{db}.Sanitize())
	var pe *pgconn.PgError
	// duplicate_database; or unique_violation when another process (a natter dev starting up
	// beside an admin command) creates it at the same moment.
	if errors.As(err, &pe) && (pe.Code == "42P04" || pe.Code == "23505") {
		return nil
	}
	return err
}

// privateClusterError names the flags that answer a private cluster's failure: pglocal speaks of
// a database URL and a data directory, the command line of --database-url and --data-dir.
func privateClusterError(err error) error {
	return fmt.Errorf("%w (flags: --database-url, or --data-dir for the private cluster)", err)
}
