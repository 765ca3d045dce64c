package admin

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/blob"
)

func restoreCommand() *cli.Command {
	return &cli.Command{
		Name: "restore",
		Usage: "restore a backup of `natter admin backup` into an empty database (--database-url, or a private one under " +
			"--data-dir, made if needed) and its upload store; then start natter serve on an empty NATS store",
		Flags: adminFlags(append(uploadFlags(),
			&cli.StringFlag{Name: "input", EnvVars: []string{"NATTER_INPUT"}, Required: true, Usage: "the backup file"},
			// No environment variable, like workspace delete's --confirm: a variable left set
			// would replace the next database too.
			&cli.BoolFlag{Name: "replace", Usage: "drop everything natter's schema holds in the database first (otherwise a " +
				"database that is not empty is refused); on the command line only"})...),
		Action: func(c *cli.Context) error {
			res, err := runRestore(c)
			if err != nil {
				return err
			}
			return report(c, res, "restored the backup of %s (natter %s): %d workspaces, %d events, %d of %d upload objects; "+
				"schema %s. Start natter serve on an empty NATS store: it rebuilds the streams from the database",
				res.Manifest.CreatedAt.Format("2006-01-02 15:04:05Z"), res.Manifest.NatterVersion, res.Manifest.Workspaces,
				res.Manifest.Events, res.UploadsRestored, res.Manifest.Uploads, res.Schema)
		},
	}
}

type restoreResult struct {
	Manifest        *backupManifest `json:"manifest"`
	UploadsRestored int             `json:"uploads_restored"`
	Applied         []int           `json:"applied_migrations"`
	Schema          string          `json:"schema"`
}

// runRestore checks the backup and the target before it changes anything, restores the dump in
// one transaction (with --replace, the drop of the old schema in the same one), brings the schema
// up to date, then writes the upload objects.
func runRestore(c *cli.Context) (*restoreResult, error) {
	ctx := c.Context
	logger := adminLogger(c)
	in, err := os.Open(c.String("input"))
	if err != nil {
		return nil, fmt.Errorf("open --input: %w", err)
	}
	defer in.Close()
	tr := tar.NewReader(in)
	m, err := readManifest(tr)
	if err != nil {
		return nil, err
	}
	if err := m.checkCompatible(); err != nil {
		return nil, err
	}
	dump, err := extractDump(tr)
	if err != nil {
		return nil, err
	}
	defer os.Remove(dump)

	// Like serve, restore works on a data dir only for what lives there, and holds its lock: a
	// server running on it is refused rather than restored under.
	diskUploads := c.String("upload-s3-endpoint") == "" && c.String("upload-dir") == ""
	if c.String("database-url") == "" || diskUploads {
		if err := os.MkdirAll(c.String("data-dir"), 0o755); err != nil {
			return nil, fmt.Errorf("create --data-dir: %w", err)
		}
		release, err := lockDataDir(c.String("data-dir"))
		if err != nil {
			return nil, err
		}
		defer release()
	}
	blobs, err := openUploads(c)
	if err != nil {
		return nil, err
	}
	dbURL, cluster, err := locateDatabase(ctx, c, logger, true)
	if err != nil {
		return nil, err
	}
	if cluster != nil {
		defer func() { _ = cluster.Stop(context.WithoutCancel(ctx)) }()
	}
	if err := checkTarget(ctx, dbURL, c.Bool("replace")); err != nil {
		return nil, err
	}
	if err := restoreDump(ctx, dbURL, dump, c.Bool("replace")); err != nil {
		return nil, err
	}
	res := &restoreResult{Manifest: m}
	store, err := persist.Open(ctx, persist.Config{URL: dbURL, MaxConns: 2, Logger: logger})
	if err != nil {
		return nil, err
	}
	res.Applied, err = store.Migrate(ctx)
	store.Close()
	if err != nil {
		return nil, fmt.Errorf("migrate the restored database: %w", err)
	}
	res.Schema = m.schemaName()
	if len(res.Applied) > 0 {
		res.Schema = fmt.Sprintf("%s, brought up to %d", m.schemaName(), res.Applied[len(res.Applied)-1])
	}
	if res.UploadsRestored, err = restoreUploads(ctx, tr, blobs, logger); err != nil {
		return nil, fmt.Errorf("the database is restored, but not every upload object: %w (run the restore again "+
			"with --replace once the cause is fixed)", err)
	}
	return res, nil
}

func readManifest(tr *tar.Reader) (*backupManifest, error) {
	h, err := tr.Next()
	if err != nil || h.Name != manifestEntry {
		return nil, errors.New("the --input file is not a natter backup (it does not start with manifest.json)")
	}
	if h.Size > maxManifest {
		return nil, errors.New("the backup's manifest is larger than a natter backup's can be")
	}
	var m backupManifest
	if err := json.NewDecoder(io.LimitReader(tr, maxManifest)).Decode(&m); err != nil {
		return nil, fmt.Errorf("the backup's manifest does not parse: %v", err)
	}
	return &m, nil
}

// extractDump copies the dump out of the archive: pg_restore reads a custom-format archive
// faster, and checks it, from a file.
func extractDump(tr *tar.Reader) (string, error) {
	h, err := tr.Next()
	if err != nil || h.Name != dumpEntry || h.Typeflag != tar.TypeReg {
		return "", errors.New("the backup holds no database dump after its manifest: it is incomplete or not natter's")
	}
	f, err := os.CreateTemp("", "natter-restore-*")
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, tr); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("read the backup's dump: %w", err)
	}
	return f.Name(), f.Close()
}

// checkTarget refuses a database other clients are connected to (a server would serve from it
// while it is replaced) and, unless replace, one that holds anything; with replace, one that
// holds anything outside natter's schema public, which replace would not drop.
func checkTarget(ctx context.Context, dbURL string, replace bool) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("connect to the database: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var others int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&others); err != nil {
		return fmt.Errorf("inspect the database: %w", err)
	}
	if others > 0 {
		return fmt.Errorf("%d other sessions are connected to the database: stop every natter server on it before restoring", others)
	}
	rows, _ := conn.Query(ctx, `SELECT n.nspname, count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%'
		  AND n.nspname NOT LIKE 'pg\_temp%'
		GROUP BY n.nspname ORDER BY n.nspname`)
	type schemaCount struct {
		Schema string
		Count  int
	}
	held, err := pgx.CollectRows(rows, pgx.RowToStructByPos[schemaCount])
	if err != nil {
		return fmt.Errorf("inspect the database: %w", err)
	}
	var parts []string
	for _, h := range held {
		if replace && h.Schema == "public" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%d relations in schema %s", h.Count, h.Schema))
	}
	switch {
	case len(parts) == 0:
		return nil
	case replace:
		return fmt.Errorf("the database holds %s, outside natter's schema: restore into a database of its own", strings.Join(parts, ", "))
	default:
		return fmt.Errorf("the database is not empty (%s): restore into an empty database, or pass --replace to drop "+
			"what natter's schema holds first", strings.Join(parts, ", "))
	}
}

// restoreDump replays the dump through psql in a single transaction, so a restore that fails
// leaves the database as it was; with replace the drop of the old schema is part of it.
func restoreDump(ctx context.Context, dbURL, dump string, replace bool) error {
	pgRestore, err := newPGProgram("pg_restore", dbURL)
	if err != nil {
		return err
	}
	psql, err := newPGProgram("psql", dbURL)
	if err != nil {
		return err
	}
	// pg_restore turns the archive into SQL without a database; --list first checks that this
	// pg_restore reads the archive, before anything is dropped.
	if err := pgRestore.run(pgRestore.offline(ctx, "--list", dump)); err != nil {
		return fmt.Errorf("read the backup's dump: %w", err)
	}
	script := pgRestore.offline(ctx, "--no-owner", "--no-privileges", "--file=-", dump)
	var scriptErr strings.Builder
	script.Stderr = &scriptErr
	sql, err := script.StdoutPipe()
	if err != nil {
		return err
	}
	prelude := ""
	if replace {
		prelude = "DROP SCHEMA IF EXISTS public CASCADE;\nCREATE SCHEMA public;\n"
	}
	apply := psql.command(ctx, "--no-psqlrc", "--quiet", "--single-transaction", "--set=ON_ERROR_STOP=1", "--file=-")
	apply.Stdin = io.MultiReader(strings.NewReader(prelude), sql)
	apply.Stdout = io.Discard
	if err := script.Start(); err != nil {
		return fmt.Errorf("pg_restore: %w", err)
	}
	applyErr := psql.run(apply)
	if applyErr != nil {
		_ = script.Process.Kill()
	}
	scriptWait := script.Wait()
	switch {
	case applyErr != nil:
		return fmt.Errorf("restore the database (nothing was changed): %w", applyErr)
	case scriptWait != nil:
		return fmt.Errorf("restore the database: pg_restore: %w: %s", scriptWait, tail(scriptErr.String(), 3))
	}
	return nil
}

// restoreUploads writes the archive's remaining entries, each uploads/<key>, into the store.
func restoreUploads(ctx context.Context, tr *tar.Reader, blobs blob.Store, logger *slog.Logger) (int, error) {
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("read the backup: %w", err)
		}
		key, ok := strings.CutPrefix(h.Name, uploadsPrefix)
		if !ok || h.Typeflag != tar.TypeReg || !blob.ValidKey(key) {
			// Never a path from the archive: a hostile one could name ../ or a link.
			logger.Warn("skipping an entry that is not an upload object", "entry", h.Name)
			continue
		}
		info, err := blobs.Put(ctx, key, tr)
		if err != nil {
			return n, fmt.Errorf("write upload %s: %w", key, err)
		}
		if info.Size != h.Size {
			return n, fmt.Errorf("upload %s: %d bytes written of %d", key, info.Size, h.Size)
		}
		n++
	}
}
