package admin

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/server/blob"
)

func backupCommand() *cli.Command {
	return &cli.Command{
		Name: "backup",
		Usage: "write a consistent backup to --output: one snapshot of PostgreSQL (pg_dump) and the upload objects its rows " +
			"name; the NATS streams are rebuilt from PostgreSQL after a restore, so they are not in it",
		Flags: adminFlags(append(uploadFlags(),
			&cli.StringFlag{Name: "output", EnvVars: []string{"NATTER_OUTPUT"}, Required: true, Usage: "the backup file to write (a tar archive); it must not exist yet"},
			&cli.BoolFlag{Name: "skip-uploads", EnvVars: []string{"NATTER_SKIP_UPLOADS"}, Usage: "leave the upload objects out (when their store is backed up by its own means, " +
				"such as a versioned bucket); their rows are always in"})...),
		Action: func(c *cli.Context) error {
			m, missing, err := runBackup(c)
			if err != nil {
				return err
			}
			return report(c, map[string]any{"output": c.String("output"), "manifest": m, "missing_uploads": missing},
				"backup written to %s: schema %s, %d workspaces, %d events, %d uploads (%s)", c.String("output"),
				m.schemaName(), m.Workspaces, m.Events, m.Uploads, uploadsSentence(m, missing))
		},
	}
}

func uploadsSentence(m *backupManifest, missing int) string {
	switch {
	case !m.UploadsIncluded:
		return "their objects left out"
	case missing > 0:
		return fmt.Sprintf("%d objects missing from the store, the rest included", missing)
	default:
		return "objects included"
	}
}

// runBackup writes the backup to a temporary file beside --output and renames it into place
// once complete, so a failed backup leaves no file that looks whole. missing counts the upload
// objects the snapshot names that the store no longer holds (deleted since, or lost before).
func runBackup(c *cli.Context) (m *backupManifest, missing int, err error) {
	ctx := c.Context
	logger := adminLogger(c)
	// Absolute, since pg_dump runs in another directory.
	out, err := filepath.Abs(c.String("output"))
	if err != nil {
		return nil, 0, fmt.Errorf("--output: %w", err)
	}
	if _, err := os.Lstat(out); err == nil {
		return nil, 0, fmt.Errorf("--output %s exists: a backup never overwrites a file; choose a new name", out)
	}
	dbURL, cluster, err := locateDatabase(ctx, c, logger, false)
	if err != nil {
		return nil, 0, err
	}
	if cluster != nil {
		defer func() { _ = cluster.Stop(context.WithoutCancel(ctx)) }()
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".natter-backup-*")
	if err != nil {
		return nil, 0, fmt.Errorf("create --output: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	// Beside --output, where the operator made room for the backup (not a small /tmp).
	dump, err := os.CreateTemp(filepath.Dir(out), ".natter-dump-*")
	if err != nil {
		return nil, 0, err
	}
	dump.Close()
	defer os.Remove(dump.Name())

	m, keys, err := dumpSnapshot(ctx, dbURL, dump.Name(), logger)
	if err != nil {
		return nil, 0, err
	}
	var blobs blob.Store
	if m.Uploads > 0 && !c.Bool("skip-uploads") {
		if blobs, err = backupUploadStore(c, m.Uploads); err != nil {
			return nil, 0, err
		}
	}
	m.UploadsIncluded = !c.Bool("skip-uploads")
	tw := tar.NewWriter(tmp)
	if err := writeManifest(tw, m); err != nil {
		return nil, 0, err
	}
	if err := writeFileEntry(tw, dumpEntry, dump.Name()); err != nil {
		return nil, 0, err
	}
	if blobs != nil {
		for _, key := range keys {
			found, err := writeUpload(ctx, tw, blobs, key)
			if err != nil {
				return nil, 0, err
			}
			if !found {
				missing++
				logger.Warn("upload object missing from the store; its row is in the backup without it", "key", key)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, 0, fmt.Errorf("write --output: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return nil, 0, fmt.Errorf("write --output: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, 0, fmt.Errorf("write --output: %w", err)
	}
	// Link rather than rename: a file created at --output meanwhile is not replaced. A
	// filesystem without hard links gets the rename.
	if err := os.Link(tmp.Name(), out); errors.Is(err, fs.ErrExist) {
		return nil, 0, fmt.Errorf("--output %s exists: a backup never overwrites a file; choose a new name", out)
	} else if err != nil {
		if err := os.Rename(tmp.Name(), out); err != nil {
			return nil, 0, fmt.Errorf("write --output: %w", err)
		}
	}
	_ = os.Remove(tmp.Name())
	return m, missing, nil
}

// dumpSnapshot exports one snapshot from a repeatable-read transaction, reads the manifest's
// facts and the upload keys in it, and has pg_dump dump that same snapshot: rows, counts and
// the list of objects to copy all describe one instant. Objects are written before their rows
// commit, so every key of the snapshot had its object then.
func dumpSnapshot(ctx context.Context, dbURL, dumpPath string, logger *slog.Logger) (*backupManifest, []string, error) {
	pgDump, err := newPGProgram("pg_dump", dbURL)
	if err != nil {
		return nil, nil, err
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to the database: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, nil, fmt.Errorf("begin the snapshot: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var snapshot string
	if err := tx.QueryRow(ctx, `SELECT pg_export_snapshot()`).Scan(&snapshot); err != nil {
		return nil, nil, fmt.Errorf("export the snapshot: %w", err)
	}
	m := &backupManifest{Format: backupFormat, FormatVersion: backupFormatVersion, CreatedAt: time.Now().UTC(),
		NatterVersion: BuildVersion()}
	var isNatter bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL AND to_regclass('uploads') IS NOT NULL`).Scan(&isNatter); err != nil {
		return nil, nil, err
	}
	if !isNatter {
		return nil, nil, errors.New("the database holds no natter schema: check --database-url (or --data-dir)")
	}
	rows, _ := tx.Query(ctx, `SELECT version, name, checksum FROM schema_migrations ORDER BY version`)
	m.Migrations, err = pgx.CollectRows(rows, pgx.RowToStructByPos[appliedMigration])
	if err != nil {
		return nil, nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM workspaces), (SELECT count(*) FROM events),
		(SELECT count(*) FROM uploads)`).Scan(&m.Workspaces, &m.Events, &m.Uploads); err != nil {
		return nil, nil, fmt.Errorf("count the snapshot: %w", err)
	}
	rows, _ = tx.Query(ctx, `SELECT storage_key FROM uploads ORDER BY storage_key`)
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, nil, fmt.Errorf("list uploads: %w", err)
	}
	logger.Info("dumping the database", "snapshot", snapshot, "schema", m.schemaName())
	// The exporting transaction stays open until pg_dump has its snapshot and its data.
	if err := pgDump.run(pgDump.command(ctx, "--format=custom", "--snapshot="+snapshot, "--file="+dumpPath)); err != nil {
		return nil, nil, fmt.Errorf("dump the database: %w", err)
	}
	if fi, err := os.Stat(dumpPath); err != nil || fi.Size() == 0 {
		return nil, nil, fmt.Errorf("dump the database: pg_dump wrote nothing to %s", dumpPath)
	}
	return m, keys, nil
}

// backupUploadStore opens the store the server keeps uploads in. An upload directory that does
// not exist is a wrong flag, not an empty store: the snapshot names objects in it.
func backupUploadStore(c *cli.Context, uploads int64) (blob.Store, error) {
	if c.String("upload-s3-endpoint") == "" {
		dir := c.String("upload-dir")
		flag := "upload-dir"
		if dir == "" {
			dir, flag = filepath.Join(c.String("data-dir"), "uploads"), "data-dir"
		}
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("the database has %d uploads but their directory %s does not exist: pass the server's --%s "+
				"(or --upload-s3-endpoint), or --skip-uploads", uploads, dir, flag)
		}
	}
	return openUploads(c)
}

func writeManifest(tw *tar.Writer, m *backupManifest) error {
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: manifestEntry, Mode: 0o600, Size: int64(len(body)), ModTime: m.CreatedAt}); err != nil {
		return fmt.Errorf("write --output: %w", err)
	}
	_, err = tw.Write(body)
	return err
}

func writeFileEntry(tw *tar.Writer, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: fi.Size(), ModTime: fi.ModTime()}); err != nil {
		return fmt.Errorf("write --output: %w", err)
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("write --output: %w", err)
	}
	return nil
}

// writeUpload copies one object into the archive; found is false when the store has none.
func writeUpload(ctx context.Context, tw *tar.Writer, blobs blob.Store, key string) (found bool, err error) {
	obj, err := blobs.Open(ctx, key)
	if errors.Is(err, blob.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read upload %s: %w", key, err)
	}
	defer obj.Close()
	if err := tw.WriteHeader(&tar.Header{Name: uploadsPrefix + key, Mode: 0o600, Size: obj.Size, ModTime: time.Now()}); err != nil {
		return false, fmt.Errorf("write --output: %w", err)
	}
	if n, err := io.Copy(tw, obj); err != nil || n != obj.Size {
		return false, fmt.Errorf("copy upload %s (%d of %d bytes): %v", key, n, obj.Size, err)
	}
	return true, nil
}
