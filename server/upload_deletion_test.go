package server_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server"
)

func TestWorkspaceDeleteDeletesUploads(t *testing.T) {
	t.Parallel()

	t.Run("ObjectsGoAfterCommit", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		c := newChat(t, h)
		other := newChat(t, h)
		icon := uploadOf(t, upload(t, h, c.owner.Token, "?workspace_id="+c.ws.ID, filePart{Name: "icon.png", ContentType: "image/png", Data: pngImage(t, 2, 2)}))
		h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/workspaces/" + c.ws.ID, Token: c.owner.Token,
			Body: map[string]any{"icon_url": icon.URL}}).RequireStatus(t, http.StatusOK)
		attached := uploadText(t, h, c.alice.Token, c.ws.ID, "a.txt", "attached")
		c.post(t, c.alice, channelMessages(c.general.ID), map[string]any{"body": "x", "upload_id": attached.ID}).RequireStatus(t, http.StatusCreated)
		uploadText(t, h, c.alice.Token, c.ws.ID, "loose.txt", "loose")
		kept := uploadText(t, h, other.alice.Token, other.ws.ID, "kept.txt", "another workspace's")
		require.Len(t, objects(t, h), 4)

		h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/workspaces/" + c.ws.ID, Token: c.owner.Token}).
			RequireStatus(t, http.StatusNoContent)
		require.Equal(t, []string{objectOf(t, h, other.alice, kept.ID)}, objects(t, h), "only the other workspace's object is left")
		require.Empty(t, queuedDeletions(t, h))
		h.Get(t, uploadPath(attached.ID), c.alice.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		h.Get(t, uploadPath(kept.ID), other.alice.Token).RequireStatus(t, http.StatusOK)
	})

	t.Run("OnlyTheOwner", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		c := newChat(t, h)
		uploadText(t, h, c.alice.Token, c.ws.ID, "a.txt", "a")
		h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/workspaces/" + c.ws.ID, Token: c.mod.Token}).
			RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		require.Len(t, objects(t, h), 1)
		require.Empty(t, queuedDeletions(t, h))
	})

	t.Run("FailuresStayQueuedAndAreRetried", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		c := newChat(t, h)
		stuck := uploadText(t, h, c.alice.Token, c.ws.ID, "stuck.txt", "stuck")
		free := uploadText(t, h, c.alice.Token, c.ws.ID, "free.txt", "free")
		stuckKey, freeKey := objectOf(t, h, c.alice, stuck.ID), objectOf(t, h, c.alice, free.ID)
		// A non-empty directory where the object was: the store cannot delete it.
		path := h.Uploads.Path(stuckKey)
		require.NoError(t, os.Remove(path))
		require.NoError(t, os.MkdirAll(filepath.Join(path, "in-the-way"), 0o700))

		h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/workspaces/" + c.ws.ID, Token: c.owner.Token}).
			RequireStatus(t, http.StatusNoContent)
		queued := queuedDeletions(t, h)
		require.Len(t, queued, 1)
		require.Equal(t, stuckKey, queued[0].StorageKey)
		require.Equal(t, c.ws.ID, queued[0].WorkspaceID)
		require.Equal(t, 1, queued[0].Attempts)
		require.NotEmpty(t, queued[0].LastError)
		require.Equal(t, []string{stuckKey}, objects(t, h), "%s went at once", freeKey)

		ctx := context.Background()
		res, err := server.DeleteQueuedUploads(ctx, h.Store, h.Uploads)
		require.NoError(t, err)
		require.Equal(t, server.UploadDeletions{Failed: 1}, res)
		require.Equal(t, 2, queuedDeletions(t, h)[0].Attempts)

		require.NoError(t, os.Remove(filepath.Join(path, "in-the-way")))
		res, err = server.DeleteQueuedUploads(ctx, h.Store, h.Uploads)
		require.NoError(t, err)
		require.Equal(t, server.UploadDeletions{Deleted: 1}, res)
		require.Empty(t, queuedDeletions(t, h))
		require.Empty(t, objects(t, h))
	})

	t.Run("ManyObjects", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		c := newChat(t, h)
		const n = 130 // more than one batch of the queue
		for i := range n {
			r := upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID, filePart{Name: "f.txt", Data: []byte{byte(i)}})
			r.RequireStatus(t, http.StatusCreated)
		}
		require.Len(t, objects(t, h), n)
		h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/workspaces/" + c.ws.ID, Token: c.owner.Token}).
			RequireStatus(t, http.StatusNoContent)
		require.Empty(t, objects(t, h))
		require.Empty(t, queuedDeletions(t, h))
	})
}

// queuedDeletions lists the upload deletion queue, read from the database.
func queuedDeletions(t *testing.T, h *servertest.Harness) []persist.UploadDeletion {
	t.Helper()
	ctx := context.Background()
	q, err := persist.WithTxV(ctx, h.Store, func(tx *persist.Tx) ([]persist.UploadDeletion, error) {
		return tx.UploadDeletionList(ctx, "", 1000)
	})
	require.NoError(t, err)
	return q
}
