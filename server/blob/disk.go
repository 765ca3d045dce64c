package blob

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Disk keeps each object as a file named by its key in one directory. A Put writes a temporary
// file in the directory's .incoming folder (same file system), syncs it and renames it into
// place, so a reader never sees a partial object and a crash leaves at most a temporary file.
type Disk struct {
	dir string
}

var _ Store = (*Disk)(nil)

// incomingDir holds objects being written.
const incomingDir = ".incoming"

// NewDisk opens (creating it if needed) the directory dir as a store.
func NewDisk(dir string) (*Disk, error) {
	if dir == "" {
		return nil, errors.New("blob: the upload directory is required")
	}
	if err := os.MkdirAll(filepath.Join(dir, incomingDir), 0o700); err != nil {
		return nil, fmt.Errorf("blob: create upload directory: %w", err)
	}
	return &Disk{dir: dir}, nil
}

// Dir is the directory objects are kept in.
func (d *Disk) Dir() string { return d.dir }

// Path is the file of the object under key.
func (d *Disk) Path(key string) string { return filepath.Join(d.dir, key) }

// Put implements Store.
func (d *Disk) Put(ctx context.Context, key string, r io.Reader) (Info, error) {
	if !ValidKey(key) {
		return Info{}, ErrInvalidKey
	}
	f, err := os.CreateTemp(filepath.Join(d.dir, incomingDir), key+"-*")
	if err != nil {
		return Info{}, fmt.Errorf("blob: create: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), contextReader{ctx, r})
	if err != nil {
		return Info{}, err
	}
	if err := f.Sync(); err != nil {
		return Info{}, fmt.Errorf("blob: sync: %w", err)
	}
	if err := f.Close(); err != nil {
		return Info{}, fmt.Errorf("blob: close: %w", err)
	}
	if err := os.Rename(f.Name(), d.Path(key)); err != nil {
		_ = os.Remove(f.Name())
		done = true
		return Info{}, fmt.Errorf("blob: rename: %w", err)
	}
	done = true
	return Info{Size: n, SHA256: h.Sum(nil)}, nil
}

// Open implements Store.
func (d *Disk) Open(_ context.Context, key string) (Object, error) {
	if !ValidKey(key) {
		return Object{}, ErrInvalidKey
	}
	f, err := os.Open(d.Path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return Object{}, ErrNotFound
	}
	if err != nil {
		return Object{}, fmt.Errorf("blob: open: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return Object{}, fmt.Errorf("blob: stat: %w", err)
	}
	return Object{ReadSeekCloser: f, Size: st.Size()}, nil
}

// Delete implements Store.
func (d *Disk) Delete(_ context.Context, key string) error {
	if !ValidKey(key) {
		return ErrInvalidKey
	}
	err := os.Remove(d.Path(key))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob: delete: %w", err)
	}
	return nil
}

// contextReader stops a copy when its context ends.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
