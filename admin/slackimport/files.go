package slackimport

import (
	"context"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/blob"
)

// fileSource opens the downloaded bytes of a Slack file: inside the archive under
// __uploads/<id>/<name> (the layout of Mattermost's slack-advanced-exporter), or in
// Options.FilesDir as <id>/<name>, <id>/ holding one file, or a file named <id>.
func (im *importer) fileSource(f file) (open func() (io.ReadCloser, error), ok bool) {
	if !safeID(f.ID) {
		return nil, false
	}
	if zf := im.archive.uploads[f.ID]; zf != nil {
		return func() (io.ReadCloser, error) { return zf.Open() }, true
	}
	if im.o.FilesDir == "" {
		return nil, false
	}
	candidates := []string{filepath.Join(im.o.FilesDir, f.ID)}
	if name := filepath.Base(f.Name); f.Name != "" && name != "." && name != ".." && name != string(filepath.Separator) {
		candidates = append([]string{filepath.Join(im.o.FilesDir, f.ID, name)}, candidates...)
	}
	if entries, err := os.ReadDir(filepath.Join(im.o.FilesDir, f.ID)); err == nil && len(entries) == 1 && entries[0].Type().IsRegular() {
		candidates = append(candidates, filepath.Join(im.o.FilesDir, f.ID, entries[0].Name()))
	}
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return func() (io.ReadCloser, error) { return os.Open(p) }, true
		}
	}
	return nil, false
}

// safeID accepts a Slack file id (letters and digits), the only ids looked up on disk.
func safeID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// upload stores a file's bytes and records the upload, in a transaction of its own, owned by
// ownerID; a file imported before is found by its id and not stored again. ok is false when
// the bytes are not at hand (the file gets a note instead).
func (im *importer) upload(ctx context.Context, f file, ownerID string, at time.Time) (uploadID string, ok bool, err error) {
	if im.o.Uploads == nil {
		return "", false, nil
	}
	open, found := im.fileSource(f)
	if !found {
		return "", false, nil
	}
	id, err := persist.WithTxV(ctx, im.o.Store, func(tx *persist.Tx) (string, error) {
		id, _, err := tx.HistoryLookup(ctx, im.h, persist.HistoryKindUpload, f.ID)
		return id, err
	})
	if err != nil || id != "" {
		return id, id != "", err
	}
	r, err := open()
	if err != nil {
		return "", false, fmt.Errorf("file %s: %w", f.ID, err)
	}
	defer r.Close()
	key := blob.NewKey()
	info, err := im.o.Uploads.Put(ctx, key, r)
	if err != nil {
		return "", false, fmt.Errorf("file %s: store: %w", f.ID, err)
	}
	contentType := f.Mimetype
	if contentType == "" {
		contentType = mime.TypeByExtension(strings.ToLower(filepath.Ext(f.Name)))
	}
	got, err := persist.WithTxV(ctx, im.o.Store, func(tx *persist.Tx) (persist.Imported, error) {
		return tx.HistoryUpload(ctx, im.h, persist.HistoryUploadParams{SourceID: f.ID, OwnerID: ownerID, StorageKey: key,
			Filename: f.displayName(), ContentType: contentType, ByteSize: info.Size, SHA256: info.SHA256, CreatedAt: at})
	})
	if err != nil || !got.Created {
		if derr := im.o.Uploads.Delete(ctx, key); derr != nil && err == nil {
			err = derr
		}
	}
	return got.ID, err == nil, err
}
