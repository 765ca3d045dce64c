// Package pglocal runs a private PostgreSQL cluster from the machine's own server binaries, for
// `natter dev`, the admin commands that work against its data dir, and the tests.
//
// The cluster listens only on a unix socket inside its directory and trusts local connections, so
// the directory's permissions are its only gate. When the process runs as root the cluster runs as
// an unprivileged user (postgres, else nobody), because initdb and postgres refuse to run as root.
package pglocal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoBinaries is returned when neither PATH nor /usr/lib/postgresql/*/bin holds initdb and pg_ctl.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, pg_ctl) not found: install the PostgreSQL server package (Debian: apt-get install postgresql) or give natter a database URL")

// superuser is the role initdb creates; connections authenticate as it over the trusted socket.
const superuser = "natter"

// Config says where a cluster lives and how it is tuned.
type Config struct {
	// Dir is the cluster's directory. Required. When the process runs as root and the
	// unprivileged user cannot reach Dir, the cluster lives in FallbackRoot instead (see Open).
	Dir string
	// FallbackRoot holds clusters whose Dir is out of reach of the unprivileged user.
	// Default /var/lib/natter.
	FallbackRoot string
	// Durable keeps fsync on. Tests turn it off for speed; `natter dev` keeps it. Default false.
	Durable bool
	// MaxConnections is postgres' max_connections. Default 100.
	MaxConnections int
	// Logger receives one line per lifecycle step. Default slog.Default().
	Logger *slog.Logger
	// MustExist opens only a cluster initialised before: Open fails with ErrNoCluster rather
	// than running initdb. Default false.
	MustExist bool
}

// ErrNoCluster is returned by Open with Config.MustExist when Dir holds no initialised cluster.
var ErrNoCluster = errors.New("no PostgreSQL cluster has been initialised there")

// Cluster is a running private cluster.
type Cluster struct {
	dataDir   string
	socketDir string
	bin       string
	runAs     *syscall.Credential
	started   bool
	logger    *slog.Logger
}

// Open finds the server binaries, initialises the cluster on first use, and starts it unless it is
// already running (a running cluster, such as the one of a live `natter dev`, is reused and left
// running by Stop). Errors name what to do: ErrNoBinaries, or a sentence about permissions.
func Open(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Dir == "" {
		return nil, errors.New("pglocal: Config.Dir is required")
	}
	if cfg.FallbackRoot == "" {
		cfg.FallbackRoot = "/var/lib/natter"
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = 100
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	bin, err := findBinaries("/usr/lib/postgresql")
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, logger: cfg.Logger}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", cfg.Dir, err)
	}
	if os.Geteuid() == 0 {
		if c.runAs, err = unprivilegedUser(); err != nil {
			return nil, err
		}
		if dir, err = c.reachableDir(dir, cfg.FallbackRoot); err != nil {
			return nil, err
		}
	}
	c.dataDir = filepath.Join(dir, "data")
	c.socketDir = dir
	if len(filepath.Join(c.socketDir, ".s.PGSQL.5432")) > 100 {
		return nil, fmt.Errorf("the PostgreSQL socket path under %s is longer than unix sockets allow: choose a shorter data directory", dir)
	}
	if _, err := os.Stat(filepath.Join(c.dataDir, "PG_VERSION")); cfg.MustExist && err != nil {
		return nil, fmt.Errorf("%s: %w", c.dataDir, ErrNoCluster)
	}
	if err := c.ensureDir(dir); err != nil {
		return nil, err
	}
	// Several processes may open one cluster at once (parallel test binaries, an admin command
	// beside `natter dev`): one initialises and starts it, the others then find it running.
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(c.dataDir, "PG_VERSION")); errors.Is(err, fs.ErrNotExist) {
		if err := c.initdb(ctx, cfg); err != nil {
			return nil, err
		}
	}
	if c.running(ctx) {
		c.logger.Info("reusing running postgres", "dir", c.dataDir)
		return c, nil
	}
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	c.started = true
	return c, nil
}

// URL is a pgx connection string for database db over the cluster's socket.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://%s@/%s?host=%s&sslmode=disable", superuser, db, c.socketDir)
}

// DataDir is where the cluster's files live.
func (c *Cluster) DataDir() string { return c.dataDir }

// Stop stops the cluster if Open started it; a reused cluster is left to its owner.
func (c *Cluster) Stop(ctx context.Context) error {
	if !c.started {
		return nil
	}
	c.started = false
	pid := c.PID()
	out, err := c.command(ctx, "pg_ctl", "stop", "-D", c.dataDir, "-m", "fast", "-w").CombinedOutput()
	if err != nil {
		return fmt.Errorf("stop postgres: %w: %s", err, lastLine(out))
	}
	// pg_ctl -w returns once the postmaster has removed its postmaster.pid, which it does on
	// its way out, not after: wait for the process itself, so a caller that stops natter and
	// then looks for (or signals, or reuses the memory of) its postgres finds it gone.
	if err := waitExited(ctx, pid); err != nil {
		return fmt.Errorf("stop postgres: %w", err)
	}
	c.logger.Info("postgres stopped", "dir", c.dataDir)
	return nil
}

// waitExited waits up to 10 s for process pid to exit. A zombie counts as exited: the postmaster
// was pg_ctl's daemon, so its parent is init, and a container's init may never reap it.
func waitExited(ctx context.Context, pid int) error {
	if pid <= 0 {
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || syscall.Kill(pid, 0) == syscall.ESRCH {
				return nil
			}
		} else if _, state, _ := strings.Cut(string(stat), ") "); strings.HasPrefix(state, "Z") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres (pid %d) still running 10 s after pg_ctl stop", pid)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (c *Cluster) initdb(ctx context.Context, cfg Config) error {
	c.logger.Info("creating postgres cluster", "dir", c.dataDir)
	out, err := c.command(ctx, "initdb", "-D", c.dataDir, "-U", superuser, "--auth=trust",
		"--encoding=UTF8", "--locale=C.UTF-8", "--no-instructions").CombinedOutput()
	if err != nil {
		_ = os.RemoveAll(c.dataDir)
		return fmt.Errorf("initdb: %w: %s", err, lastLine(out))
	}
	fsync := "off"
	if cfg.Durable {
		fsync = "on"
	}
	conf := fmt.Sprintf(`
# written by natter: a private cluster reachable only through its unix socket
listen_addresses = ''
unix_socket_directories = '%s'
unix_socket_permissions = 0700
max_connections = %d
fsync = %s
synchronous_commit = on
shared_buffers = 128MB
logging_collector = off
`, c.socketDir, cfg.MaxConnections, fsync)
	f, err := os.OpenFile(filepath.Join(c.dataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("configure postgres: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(conf); err != nil {
		return fmt.Errorf("configure postgres: %w", err)
	}
	return nil
}

func (c *Cluster) running(ctx context.Context) bool {
	return c.command(ctx, "pg_ctl", "status", "-D", c.dataDir).Run() == nil
}

func (c *Cluster) start(ctx context.Context) error {
	logFile := filepath.Join(c.socketDir, "postgres.log")
	out, err := c.command(ctx, "pg_ctl", "start", "-D", c.dataDir, "-l", logFile, "-w", "-t", "60").CombinedOutput()
	if err != nil {
		return fmt.Errorf("start postgres (log in %s): %w: %s", logFile, err, lastLine(out))
	}
	c.logger.Info("postgres started", "dir", c.dataDir)
	return nil
}

// command runs a server binary, as the unprivileged user when we are root. Setpgid keeps the
// postmaster out of our process group, so a Ctrl-C to `natter dev` reaches only natter, which then
// stops the cluster in order.
func (c *Cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.runAs}
	cmd.Dir = os.TempDir()
	return cmd
}

func (c *Cluster) ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if c.runAs != nil {
		if err := os.Chown(dir, int(c.runAs.Uid), int(c.runAs.Gid)); err != nil {
			return fmt.Errorf("hand %s to the postgres user: %w", dir, err)
		}
	}
	return os.Chmod(dir, 0o700)
}

// reachableDir returns dir when the unprivileged user can enter every ancestor of it. Otherwise
// (a clone under /root, say) the cluster lives under fallbackRoot, in a directory named after dir,
// and dir holds a marker naming it. When the marker is gone (the data dir was deleted to start
// afresh) the stale fallback cluster is deleted too, so resetting the data dir resets the database.
func (c *Cluster) reachableDir(dir, fallbackRoot string) (string, error) {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", parent, err)
	}
	if canTraverse(parent, c.runAs) {
		return dir, nil
	}
	sum := sha256.Sum256([]byte(dir))
	alt := filepath.Join(fallbackRoot, "pg-"+hex.EncodeToString(sum[:6]))
	marker := dir + ".location"
	if _, err := os.Stat(marker); errors.Is(err, fs.ErrNotExist) {
		if err := os.RemoveAll(alt); err != nil {
			return "", fmt.Errorf("remove stale cluster %s: %w", alt, err)
		}
	}
	if err := os.MkdirAll(fallbackRoot, 0o755); err != nil {
		return "", fmt.Errorf("the postgres user cannot enter %s and %s cannot be created (%v): choose a data directory outside %s, or run `chmod o+x` on its parent directories", parent, fallbackRoot, err, parent)
	}
	if !canTraverse(fallbackRoot, c.runAs) {
		return "", fmt.Errorf("the postgres user can enter neither %s nor %s: choose a data directory it can reach, or run `chmod o+x` on the parent directories of %s", parent, fallbackRoot, parent)
	}
	if err := os.WriteFile(marker, []byte(alt+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", marker, err)
	}
	c.logger.Info("postgres cannot enter the data dir as an unprivileged user; the cluster lives elsewhere",
		"data_dir", parent, "cluster_dir", alt, "marker", marker)
	return alt, nil
}

// canTraverse reports whether the user of cred may enter dir and all its ancestors, judged by the
// permission bits (ACLs aside).
func canTraverse(dir string, cred *syscall.Credential) bool {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return false
		}
		mode := fi.Mode().Perm()
		var bit fs.FileMode
		switch {
		case st.Uid == cred.Uid:
			bit = 0o100
		case st.Gid == cred.Gid:
			bit = 0o010
		default:
			bit = 0o001
		}
		if mode&bit == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

func unprivilegedUser() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("running as root, but neither a postgres nor a nobody user exists to run PostgreSQL: create one, run natter as an ordinary user, or give natter a database URL")
}

// Program returns the path of a PostgreSQL program (pg_dump, pg_restore) of the installation
// whose server binaries Open uses, so that a private cluster is dumped by its own version.
func Program(name string) (string, error) {
	bin, err := findBinaries("/usr/lib/postgresql")
	if err != nil {
		return "", err
	}
	p := filepath.Join(bin, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found beside the PostgreSQL server binaries in %s: install the PostgreSQL client package", name, bin)
	}
	return p, nil
}

// findBinaries prefers PATH, then the newest <root>/<version>/bin (Debian's layout).
func findBinaries(root string) (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dir = filepath.Dir(real)
		}
		if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "bin"))
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// PID is the postmaster's process id, from its postmaster.pid; 0 when it cannot be read.
func (c *Cluster) PID() int {
	b, err := os.ReadFile(filepath.Join(c.dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// Started reports whether Open started the cluster (and Stop will stop it), rather than reusing
// one already running.
func (c *Cluster) Started() bool { return c.started }
