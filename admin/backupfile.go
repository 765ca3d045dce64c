package admin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/pglocal"
)

// A backup is one uncompressed tar archive (the dump is compressed by pg_dump, and most uploads
// are compressed formats already), its entries in this order so that restore can check
// everything before it writes anything, reading the archive once:
//
//	manifest.json     what the backup holds: format, schema, counts
//	database.pgdump   pg_dump --format=custom of one snapshot
//	uploads/<key>     each upload object the snapshot's rows name, unless --skip-uploads
const (
	backupFormat        = "natter-backup"
	backupFormatVersion = 1
	manifestEntry       = "manifest.json"
	dumpEntry           = "database.pgdump"
	uploadsPrefix       = "uploads/"
	// maxManifest bounds what restore reads as the manifest: a hostile archive cannot make it
	// buffer more.
	maxManifest = 1 << 20
)

// backupManifest describes a backup; restore refuses one it cannot restore before touching the
// target.
type backupManifest struct {
	Format        string             `json:"format"`
	FormatVersion int                `json:"format_version"`
	CreatedAt     time.Time          `json:"created_at"`
	NatterVersion string             `json:"natter_version"`
	Migrations    []appliedMigration `json:"migrations"`
	Workspaces    int64              `json:"workspaces"`
	Events        int64              `json:"events"`
	// Uploads counts the upload rows of the snapshot; UploadsIncluded says whether their
	// objects follow the dump (false with --skip-uploads).
	Uploads         int64 `json:"uploads"`
	UploadsIncluded bool  `json:"uploads_included"`
}

// appliedMigration is a row of schema_migrations.
type appliedMigration struct {
	Version  int    `json:"version"`
	Name     string `json:"name"`
	Checksum string `json:"checksum"`
}

// schemaName is the latest migration of the manifest, for messages.
func (m *backupManifest) schemaName() string {
	if len(m.Migrations) == 0 {
		return "none"
	}
	return m.Migrations[len(m.Migrations)-1].Name
}

// checkCompatible refuses a backup this binary cannot serve: one whose schema holds a migration
// the binary does not embed (taken by a newer natter), or one whose migration differs from the
// embedded file of its number. An older schema is fine: restore applies what it lacks.
func (m *backupManifest) checkCompatible() error {
	if m.Format != backupFormat {
		return errors.New("the --input file is not a natter backup (its manifest names no natter-backup format)")
	}
	if m.FormatVersion != backupFormatVersion {
		return fmt.Errorf("the backup has format version %d; this natter reads version %d: restore it with the natter "+
			"that took it (%s)", m.FormatVersion, backupFormatVersion, m.NatterVersion)
	}
	all, err := persist.Migrations()
	if err != nil {
		return err
	}
	known := map[int]int{}
	for i, mg := range all {
		known[mg.Version] = i
	}
	for _, a := range m.Migrations {
		i, ok := known[a.Version]
		if !ok {
			return fmt.Errorf("the backup's schema has migration %s, which this binary does not know (its latest is %s): "+
				"restore with a natter at least as new as the one that took the backup (%s)", a.Name, all[len(all)-1].Name, m.NatterVersion)
		}
		if all[i].Checksum != a.Checksum {
			return fmt.Errorf("the backup's migration %s differs from this binary's: it was taken by a natter built from other sources (%s)",
				a.Name, m.NatterVersion)
		}
	}
	return nil
}

// pgProgram runs a PostgreSQL client program (pg_dump, psql, pg_restore) of the installation
// natter finds for its private clusters, against conn. The password travels in PGPASSWORD, not
// on the command line where other users' ps would see it.
type pgProgram struct {
	path string
	conn string
	env  []string
}

func newPGProgram(name, dbURL string) (*pgProgram, error) {
	path, err := pglocal.Program(name)
	if err != nil {
		return nil, err
	}
	conn, env, err := libpqConnString(dbURL)
	if err != nil {
		return nil, err
	}
	return &pgProgram{path: path, conn: conn, env: env}, nil
}

func (p *pgProgram) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, p.path, append(args, "--dbname="+p.conn)...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Dir = os.TempDir()
	return cmd
}

// offline is a command that reads files, not the database (pg_restore writing SQL).
func (p *pgProgram) offline(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, p.path, args...)
	cmd.Dir = os.TempDir()
	return cmd
}

// run runs the program and turns a failure into an error carrying its last lines of stderr.
func (p *pgProgram) run(cmd *exec.Cmd) error {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", cmd.Args[0], err, tail(stderr.String(), 3))
	}
	return nil
}

// libpqParams are the URL parameters libpq understands; pgx's own (pool_max_conns and the like)
// would make the PostgreSQL tools refuse the URL.
var libpqParams = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "passfile": true,
	"channel_binding": true, "connect_timeout": true, "options": true, "application_name": true,
	"keepalives": true, "keepalives_idle": true, "keepalives_interval": true, "keepalives_count": true,
	"tcp_user_timeout": true, "sslmode": true, "sslcert": true, "sslkey": true, "sslpassword": true,
	"sslrootcert": true, "sslcrl": true, "sslsni": true, "gssencmode": true, "krbsrvname": true,
	"target_session_attrs": true, "service": true, "sslcompression": true, "requirepeer": true,
}

// libpqConnString turns natter's database URL into one for libpq, with the password (if any)
// moved to the environment. A keyword=value string passes through as it is.
func libpqConnString(dbURL string) (string, []string, error) {
	if !strings.Contains(dbURL, "://") {
		return dbURL, nil, nil
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", nil, configError("database-url", "does not parse as a PostgreSQL URL")
	}
	var env []string
	if pw, ok := u.User.Password(); ok {
		env = append(env, "PGPASSWORD="+pw)
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	for k := range q {
		if !libpqParams[k] {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), env, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}
