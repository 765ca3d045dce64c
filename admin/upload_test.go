package admin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server/blob"
)

// TestAdminUploadsRetryDeletions queues upload objects the way a workspace deletion does when
// their deletion fails, then deletes them with the admin command and at server start.
func TestAdminUploadsRetryDeletions(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	ctx := context.Background()
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	dataDir := t.TempDir()
	blobs, err := blob.NewDisk(filepath.Join(dataDir, "uploads"))
	require.NoError(t, err)
	owner := persisttest.User(t, store, nil)
	actor := persist.ActorFor(owner)

	// queue stores an object as an upload of a new workspace, then deletes the workspace without
	// touching the store: the object is left queued.
	queue := func() string {
		t.Helper()
		w := persisttest.Workspace(t, store, owner.ID)
		key := blob.NewKey()
		info, err := blobs.Put(ctx, key, strings.NewReader("bytes"))
		require.NoError(t, err)
		require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error {
			_, _, err := tx.UploadCreate(ctx, actor, persist.UploadCreateParams{WorkspaceID: w.ID, StorageKey: key,
				Filename: "f.txt", ByteSize: info.Size, SHA256: info.SHA256})
			return err
		}))
		require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error { return tx.WorkspaceDelete(ctx, actor, w.ID) }))
		return key
	}
	gone := func(key string) bool {
		_, err := blobs.Open(ctx, key)
		return errors.Is(err, blob.ErrNotFound)
	}

	key := queue()
	require.False(t, gone(key))
	out, err := run(t, "admin", "uploads", "retry-deletions", "--database-url", url, "--upload-dir", blobs.Dir())
	require.NoError(t, err)
	require.Contains(t, out, "deleted 1 upload objects; 0 failed")
	require.True(t, gone(key))

	// A failure is reported, and the object stays queued.
	key = queue()
	path := blobs.Path(key)
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.MkdirAll(filepath.Join(path, "in-the-way"), 0o700))
	out, err = run(t, "admin", "uploads", "retry-deletions", "--database-url", url, "--data-dir", dataDir)
	require.ErrorContains(t, err, "1 upload objects could not be deleted")
	require.Contains(t, out, "deleted 0 upload objects; 1 failed")

	// A server retries the queue when it starts (its uploads under <data-dir>/uploads by default).
	require.NoError(t, os.Remove(filepath.Join(path, "in-the-way")))
	other := queue()
	startServer(t, "serve", "--database-url", url, "--data-dir", dataDir, "--addr", "127.0.0.1:0")
	require.True(t, gone(key))
	require.True(t, gone(other))
	queued, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.UploadDeletion, error) {
		return tx.UploadDeletionList(ctx, "", 10)
	})
	require.NoError(t, err)
	require.Empty(t, queued)
}
