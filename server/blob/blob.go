package blob

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"io"
	"strings"
)

// Store keeps objects by key. Implementations are safe for concurrent use.
type Store interface {
	// Put writes the whole of r under key and returns its size and SHA-256. An object is
	// visible only once complete: a failed or cancelled Put leaves nothing under key. A key
	// is written once; Put over an existing key replaces it.
	Put(ctx context.Context, key string, r io.Reader) (Info, error)
	// Open returns the object under key for reading and seeking. Errors: ErrNotFound.
	Open(ctx context.Context, key string) (Object, error)
	// Delete removes the object under key; a missing object is not an error.
	Delete(ctx context.Context, key string) error
}

// Info describes a stored object.
type Info struct {
	Size   int64
	SHA256 []byte
}

// Object is an open object. The caller closes it.
type Object struct {
	io.ReadSeekCloser
	// Size is the object's length in bytes.
	Size int64
}

// ErrNotFound is returned by Open when no object has the key.
var ErrNotFound = errors.New("blob: object not found")

// ErrInvalidKey is returned for a key NewKey could not have made.
var ErrInvalidKey = errors.New("blob: invalid key")

// keyPrefix starts every key: the spec's upload-<random>.
const keyPrefix = "upload-"

var keyEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewKey returns a fresh storage key, upload-<random> with 160 random bits in lowercase
// base32: unguessable, and unrelated to the file's name.
func NewKey() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return keyPrefix + keyEncoding.EncodeToString(b)
}

// ValidKey reports whether key has the shape NewKey gives, so it is safe as a file name and an
// object name.
func ValidKey(key string) bool {
	rest, ok := strings.CutPrefix(key, keyPrefix)
	if !ok || len(rest) != 32 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}
