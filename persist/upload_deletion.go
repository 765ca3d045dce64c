package persist

import (
	"context"
	"strings"
	"time"
)

// maxDeletionErrorLength bounds the failure text kept on a queued deletion, in bytes.
const maxDeletionErrorLength = 512

// UploadDeletion is an upload object queued for deletion from the upload store: its metadata
// went with its workspace. A row stays until the object is gone; failures are counted.
type UploadDeletion struct {
	StorageKey  string
	WorkspaceID string
	QueuedAt    time.Time
	Attempts    int
	LastError   string
}

// uploadDeletionsQueue queues the objects of every upload of a workspace about to be deleted,
// in the deleting transaction, so no object is forgotten whatever happens after commit.
func (tx *Tx) uploadDeletionsQueue(ctx context.Context, workspaceID string) error {
	_, err := tx.exec(ctx, `INSERT INTO upload_deletions (storage_key, workspace_id, queued_at)
		SELECT storage_key, workspace_id, $2 FROM uploads WHERE workspace_id = $1
		ON CONFLICT (storage_key) DO NOTHING`, workspaceID, tx.now)
	return err
}

// UploadDeletionList returns up to limit queued deletions whose key sorts after afterKey, in
// key order, so one pass over the queue visits each row once.
func (tx *Tx) UploadDeletionList(ctx context.Context, afterKey string, limit int) ([]UploadDeletion, error) {
	rows, err := tx.query(ctx, `SELECT storage_key, workspace_id, queued_at, attempts, coalesce(last_error, '')
		FROM upload_deletions WHERE storage_key > $1 ORDER BY storage_key LIMIT $2`, afterKey, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []UploadDeletion{}
	for rows.Next() {
		var d UploadDeletion
		if err := rows.Scan(&d.StorageKey, &d.WorkspaceID, &d.QueuedAt, &d.Attempts, &d.LastError); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// UploadDeletionDone removes a queued deletion whose object is gone.
func (tx *Tx) UploadDeletionDone(ctx context.Context, storageKey string) error {
	_, err := tx.exec(ctx, `DELETE FROM upload_deletions WHERE storage_key = $1`, storageKey)
	return err
}

// UploadDeletionFailed records a failed attempt (the reason is cut to 512 bytes); the row stays
// queued for the next pass.
func (tx *Tx) UploadDeletionFailed(ctx context.Context, storageKey, reason string) error {
	if len(reason) > maxDeletionErrorLength {
		reason = strings.ToValidUTF8(reason[:maxDeletionErrorLength], "")
	}
	_, err := tx.exec(ctx, `UPDATE upload_deletions SET attempts = attempts + 1, last_error = $2
		WHERE storage_key = $1`, storageKey, reason)
	return err
}
