package blob_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/server/blob"
)

func TestDisk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("PutOpenDelete", func(t *testing.T) {
		t.Parallel()
		d, err := blob.NewDisk(filepath.Join(t.TempDir(), "uploads"))
		require.NoError(t, err)
		key := blob.NewKey()
		data := []byte("hello, object")
		info, err := d.Put(ctx, key, bytes.NewReader(data))
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		require.Equal(t, blob.Info{Size: int64(len(data)), SHA256: sum[:]}, info)

		obj, err := d.Open(ctx, key)
		require.NoError(t, err)
		require.Equal(t, int64(len(data)), obj.Size)
		_, err = obj.Seek(7, io.SeekStart)
		require.NoError(t, err)
		rest, err := io.ReadAll(obj)
		require.NoError(t, err)
		require.Equal(t, "object", string(rest))
		require.NoError(t, obj.Close())

		require.NoError(t, d.Delete(ctx, key))
		_, err = d.Open(ctx, key)
		require.ErrorIs(t, err, blob.ErrNotFound)
		require.NoError(t, d.Delete(ctx, key), "deleting a missing object is not an error")
	})

	t.Run("AFailedPutLeavesNothing", func(t *testing.T) {
		t.Parallel()
		d, err := blob.NewDisk(t.TempDir())
		require.NoError(t, err)
		key := blob.NewKey()
		boom := errors.New("client went away")
		_, err = d.Put(ctx, key, io.MultiReader(bytes.NewReader([]byte("partial")), errReader{boom}))
		require.ErrorIs(t, err, boom)
		_, err = d.Open(ctx, key)
		require.ErrorIs(t, err, blob.ErrNotFound)
		entries, err := os.ReadDir(filepath.Join(d.Dir(), ".incoming"))
		require.NoError(t, err)
		require.Empty(t, entries, "the temporary file is removed")

		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		_, err = d.Put(cancelled, key, bytes.NewReader([]byte("late")))
		require.ErrorIs(t, err, context.Canceled)
		_, err = d.Open(ctx, key)
		require.ErrorIs(t, err, blob.ErrNotFound)
	})

	t.Run("KeysAreChecked", func(t *testing.T) {
		t.Parallel()
		d, err := blob.NewDisk(t.TempDir())
		require.NoError(t, err)
		for _, key := range []string{"", "../etc/passwd", "upload-../../x", "cat.png", "upload-ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", blob.NewKey() + "/x"} {
			require.False(t, blob.ValidKey(key), key)
			_, err := d.Put(ctx, key, bytes.NewReader(nil))
			require.ErrorIs(t, err, blob.ErrInvalidKey, key)
			_, err = d.Open(ctx, key)
			require.ErrorIs(t, err, blob.ErrInvalidKey, key)
			require.ErrorIs(t, d.Delete(ctx, key), blob.ErrInvalidKey, key)
		}
		seen := map[string]bool{}
		for range 100 {
			k := blob.NewKey()
			require.True(t, blob.ValidKey(k), k)
			require.Regexp(t, `^upload-[a-z2-7]{32}$`, k)
			require.False(t, seen[k])
			seen[k] = true
		}
	})

	t.Run("DirectoryRequired", func(t *testing.T) {
		t.Parallel()
		_, err := blob.NewDisk("")
		require.Error(t, err)
	})
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
