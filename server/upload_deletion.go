package server

import (
	"context"
	"time"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/blob"
)

// uploadDeletionBatch is how many queued deletions one transaction reads.
const uploadDeletionBatch = 100

// UploadDeletions is the outcome of one pass over the upload deletion queue.
type UploadDeletions struct {
	// Deleted objects are gone from the store and from the queue.
	Deleted int
	// Failed objects stay queued for the next pass (the next server start, or
	// `natter admin uploads retry-deletions`).
	Failed int
}

// DeleteQueuedUploads makes one pass over the upload deletion queue that workspace deletions
// fill: each object is deleted from blobs (a missing one counts as deleted), then its row is
// removed; a failure is recorded on the row, which stays. It runs after a workspace deletion
// commits, at server start, and on demand. Several passes at once (replicas) are harmless.
// The error is the database's or the context's; store failures only count as Failed.
func DeleteQueuedUploads(ctx context.Context, store *persist.Store, blobs blob.Store) (UploadDeletions, error) {
	var out UploadDeletions
	after := ""
	for {
		batch, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.UploadDeletion, error) {
			return tx.UploadDeletionList(ctx, after, uploadDeletionBatch)
		})
		if err != nil {
			return out, err
		}
		for _, d := range batch {
			after = d.StorageKey
			if derr := blobs.Delete(ctx, d.StorageKey); derr != nil {
				if ctx.Err() != nil {
					return out, ctx.Err()
				}
				out.Failed++
				if err := store.WithTx(ctx, func(tx *persist.Tx) error {
					return tx.UploadDeletionFailed(ctx, d.StorageKey, derr.Error())
				}); err != nil {
					return out, err
				}
				continue
			}
			if err := store.WithTx(ctx, func(tx *persist.Tx) error { return tx.UploadDeletionDone(ctx, d.StorageKey) }); err != nil {
				return out, err
			}
			out.Deleted++
		}
		if len(batch) < uploadDeletionBatch {
			return out, nil
		}
	}
}

// uploadDeletionTimeout bounds the pass a workspace deletion runs before it answers; what is
// left stays queued.
const uploadDeletionTimeout = 30 * time.Second

// deleteQueuedUploads runs a pass after a commit that queued deletions, whatever becomes of the
// request, and logs the outcome.
func (s *Server) deleteQueuedUploads(ctx context.Context) {
	if s.blobs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), uploadDeletionTimeout)
	defer cancel()
	res, err := DeleteQueuedUploads(ctx, s.store, s.blobs)
	if err != nil || res.Failed > 0 {
		s.logger.Warn("upload objects left queued for deletion", "correlation_id", correlationID(ctx),
			"deleted", res.Deleted, "failed", res.Failed, "error", err)
	}
}
