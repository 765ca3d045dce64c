package server_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
)

// filePart is one file of a multipart upload request. An empty ContentType sends the part
// without a Content-Type header.
type filePart struct {
	Name        string
	ContentType string
	Data        []byte
}

// multipartBody builds an upload request body: the form fields first (in order, name then
// value), then the file in the field "file". It returns the body and its Content-Type.
func multipartBody(t *testing.T, f filePart, fields ...string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		require.NoError(t, mw.WriteField(fields[i], fields[i+1]))
	}
	hdr := textproto.MIMEHeader{}
	hdr.Set("Content-Disposition", `form-data; name="file"; filename="`+strings.ReplaceAll(f.Name, `"`, `\"`)+`"`)
	if f.ContentType != "" {
		hdr.Set("Content-Type", f.ContentType)
	}
	w, err := mw.CreatePart(hdr)
	require.NoError(t, err)
	_, err = w.Write(f.Data)
	require.NoError(t, err)
	require.NoError(t, mw.Close())
	return buf.Bytes(), mw.FormDataContentType()
}

// upload posts f to /api/uploads with query (such as "?workspace_id=…&nonce=…") as token.
func upload(t *testing.T, h *servertest.Harness, token, query string, f filePart, fields ...string) *servertest.Response {
	t.Helper()
	body, ct := multipartBody(t, f, fields...)
	return h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/uploads" + query, Token: token, Body: body,
		Header: map[string]string{"Content-Type": ct}})
}

// uploadOf decodes the {upload} of a response.
func uploadOf(t *testing.T, r *servertest.Response) persist.Upload {
	t.Helper()
	var out struct {
		Upload persist.Upload `json:"upload"`
	}
	r.Decode(t, &out)
	require.NotEmpty(t, out.Upload.ID, "%s", r.Body)
	return out.Upload
}

// uploadText stores a text file in a workspace as token and returns it.
func uploadText(t *testing.T, h *servertest.Harness, token, workspaceID, name, text string) persist.Upload {
	t.Helper()
	r := upload(t, h, token, "?workspace_id="+workspaceID, filePart{Name: name, ContentType: "text/plain", Data: []byte(text)})
	r.RequireStatus(t, http.StatusCreated)
	return uploadOf(t, r)
}

// pngImage encodes a w×h PNG.
func pngImage(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))))
	return buf.Bytes()
}

// objects lists the object files of the harness's upload store, in name order (files being
// written are left out; incoming lists those).
func objects(t *testing.T, h *servertest.Harness) []string {
	t.Helper()
	return dirNames(t, h.Uploads.Dir())
}

// incoming lists the temporary files of uploads in flight or abandoned.
func incoming(t *testing.T, h *servertest.Harness) []string {
	t.Helper()
	return dirNames(t, filepath.Join(h.Uploads.Dir(), ".incoming"))
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := []string{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// objectOf returns the storage key of an upload, read from the database.
func objectOf(t *testing.T, h *servertest.Harness, owner servertest.Actor, id string) string {
	t.Helper()
	ctx := context.Background()
	u, err := persist.WithTxV(ctx, h.Store, func(tx *persist.Tx) (persist.Upload, error) {
		return tx.UploadGet(ctx, persist.ActorFor(owner.User), id)
	})
	require.NoError(t, err)
	return u.StorageKey
}

// uploadPath is the path of an upload's bytes.
func uploadPath(id string) string { return persist.UploadPathPrefix + id }
