package server

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/blob"
)

// Upload limits of the spec's §Limits.
const (
	// MaxUploadBody bounds the whole multipart request of an upload: 64 MiB.
	MaxUploadBody = 64 << 20
	// imageHeadBytes is how much of an image is kept to read its dimensions from.
	imageHeadBytes = 512 << 10
	// maxFormField bounds a multipart form field other than the file (workspace_id).
	maxFormField = 1 << 10
)

// uploadCSP sandboxes whatever an upload holds if a browser renders it: no script, no plugin,
// no form, no request anywhere but images and media from this origin.
const uploadCSP = "default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'; sandbox; frame-ancestors 'self'"

// Upload nonce look-ups announce themselves under both vendor names (CONTRACT §Compatibility).
var uploadNonceHeaders = []string{"X-Natter-Upload-Nonce", "supported", "X-ClickClack-Upload-Nonce", "supported"}

// handleUploadCreate serves POST /api/uploads?workspace_id=&nonce=, a multipart body whose file
// field is the file (workspace_id may instead be a form field before it). The caller is
// admitted before a byte of the file is read; a nonce the caller used before in the workspace
// answers 200 with the original without reading the body. The object is stored first, then
// recorded; an upload that is not recorded leaves no object.
func (s *Server) handleUploadCreate(w http.ResponseWriter, r *http.Request) {
	if s.blobs == nil {
		s.writeError(w, r, errUploadsOff)
		return
	}
	ctx := r.Context()
	actor := callerOf(ctx).Actor()
	q := r.URL.Query()
	workspaceID, nonce := q.Get("workspace_id"), q.Get("nonce")
	if nonce != "" && workspaceID == "" {
		s.writeError(w, r, persist.Invalid("workspace_id is required in the query when nonce is sent"))
		return
	}
	admit := func(workspaceID, nonce string) (uploadOutcome, error) {
		return persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (uploadOutcome, error) {
			up, replayed, err := tx.UploadPrepare(ctx, actor, workspaceID, nonce)
			return uploadOutcome{up, replayed}, err
		})
	}
	if workspaceID != "" {
		prior, err := admit(workspaceID, nonce)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if prior.replayed {
			writeJSON(w, http.StatusOK, map[string]any{"upload": prior.upload})
			return
		}
	}
	if r.ContentLength > MaxUploadBody {
		s.writeError(w, r, uploadReadError(&http.MaxBytesError{Limit: MaxUploadBody}))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxUploadBody)
	mr, file, formWorkspace, err := nextFilePart(r)
	if err != nil {
		s.writeError(w, r, uploadReadError(err))
		return
	}
	switch {
	case workspaceID == "":
		if _, err := admit(formWorkspace, ""); err != nil {
			s.writeError(w, r, err)
			return
		}
		workspaceID = formWorkspace
	case formWorkspace != "" && formWorkspace != workspaceID:
		s.writeError(w, r, persist.Invalid("the workspace_id form field differs from the query's"))
		return
	}
	contentType := uploadContentType(file.Header.Get("Content-Type"))
	head := &headBuffer{max: imageHeadBytes}
	if !strings.HasPrefix(contentType, "image/") {
		head.max = 0
	}
	key := blob.NewKey()
	src := &readTracker{r: file}
	info, err := s.blobs.Put(ctx, key, io.TeeReader(src, head))
	if err == nil {
		// The rest of the request counts too: the whole of it is limited, and must be well formed.
		err = drainParts(mr)
		src.err = err
		if err != nil {
			s.discardObject(ctx, key)
		}
	}
	if err != nil {
		if src.err != nil {
			err = uploadReadError(src.err)
		}
		s.writeError(w, r, err)
		return
	}
	params := persist.UploadCreateParams{WorkspaceID: workspaceID, Nonce: nonce, StorageKey: key,
		Filename: file.FileName(), ContentType: contentType, ByteSize: info.Size, SHA256: info.SHA256}
	params.Width, params.Height = imageSize(head.buf)
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (uploadOutcome, error) {
		up, replayed, err := tx.UploadCreate(ctx, actor, params)
		return uploadOutcome{up, replayed}, err
	})
	if err != nil || res.replayed {
		s.discardObject(ctx, key)
	}
	switch {
	case err != nil:
		s.writeError(w, r, err)
	case res.replayed:
		writeJSON(w, http.StatusOK, map[string]any{"upload": res.upload})
	default:
		writeJSON(w, http.StatusCreated, map[string]any{"upload": res.upload})
	}
}

// uploadOutcome is an upload and whether it is the original of a nonce replay.
type uploadOutcome struct {
	upload   persist.Upload
	replayed bool
}

var errUploadsOff = persist.Errorf(persist.CodeUnavailable, "uploads are not configured on this server")

// nextFilePart reads the multipart body up to the file field, keeping a workspace_id field met
// on the way. Errors: those of the body (a *http.MaxBytesError past the limit), errNotMultipart,
// errNoFile.
func nextFilePart(r *http.Request) (mr *multipart.Reader, file *multipart.Part, workspaceID string, err error) {
	mr, err = r.MultipartReader()
	if err != nil {
		return nil, nil, "", errNotMultipart
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, nil, "", errNoFile
		}
		if err != nil {
			return nil, nil, "", err
		}
		switch part.FormName() {
		case "file":
			if !validText(part.FileName()) {
				return nil, nil, "", invalidText("the file name")
			}
			return mr, part, workspaceID, nil
		case "workspace_id":
			v, err := io.ReadAll(io.LimitReader(part, maxFormField))
			if err != nil {
				return nil, nil, "", err
			}
			if !validText(string(v)) {
				return nil, nil, "", invalidText("form field workspace_id")
			}
			workspaceID = strings.TrimSpace(string(v))
		}
	}
}

// drainParts reads the parts after the file to the end of the body, so that a body past the
// limit or cut short is refused even when the file itself arrived whole.
func drainParts(mr *multipart.Reader) error {
	for {
		_, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

var (
	errNotMultipart = persist.Errorf(persist.CodeUnsupportedMediaType, "send the file as multipart/form-data, in the field file")
	errNoFile       = persist.Invalid("the multipart body has no file field")
)

// uploadReadError turns a failure to read the request body into its answer: 413 past the limit,
// 400 for a malformed or truncated body.
func uploadReadError(err error) error {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return persist.Errorf(persist.CodeBodyTooLarge, "uploads are limited to %d MiB per request", MaxUploadBody>>20)
	case errors.Is(err, context.Canceled):
		return err
	}
	if _, ok := persist.ErrorOf(err); ok {
		return err
	}
	return persist.Invalid("the multipart body is malformed or incomplete")
}

// readTracker remembers the error of reading the uploaded file, to tell a client's failure
// (a body past the limit, cut short or malformed) from the upload store's.
type readTracker struct {
	r   io.Reader
	err error
}

func (t *readTracker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		t.err = err
	}
	return n, err
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	buf []byte
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.max - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// uploadContentType is the stored form of a declared content type: the parsed media type with
// its parameters, application/octet-stream when missing or unparseable.
func uploadContentType(declared string) string {
	if declared == "" {
		return persist.DefaultContentType
	}
	mt, params, err := mime.ParseMediaType(declared)
	if err != nil {
		return persist.DefaultContentType
	}
	if v := mime.FormatMediaType(mt, params); v != "" && len(v) <= persist.MaxContentTypeLength {
		return v
	}
	return mt
}

// imageSize reads the dimensions from the start of an image (PNG, JPEG or GIF, with the standard
// library's decoders); nil when head is not one of them.
func imageSize(head []byte) (width, height *int) {
	if len(head) == 0 {
		return nil, nil
	}
	for _, decode := range []func(io.Reader) (image.Config, error){png.DecodeConfig, jpeg.DecodeConfig, gif.DecodeConfig} {
		if cfg, err := decode(bytes.NewReader(head)); err == nil && cfg.Width >= 0 && cfg.Height >= 0 {
			return &cfg.Width, &cfg.Height
		}
	}
	return nil, nil
}

// discardObject deletes an object that was stored but not recorded; a failure only leaves an
// unreferenced file, logged.
func (s *Server) discardObject(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := s.blobs.Delete(ctx, key); err != nil {
		s.logger.Warn("discard unrecorded upload object", "correlation_id", correlationID(ctx), "error", err)
	}
}

// handleUploadByNonce serves GET /api/uploads/by-nonce?workspace_id=&nonce=: the caller's own
// upload's metadata. The route's requirement adds the nonce headers to every answer.
func (s *Server) handleUploadByNonce(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	up, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.Upload, error) {
		return tx.UploadGetByNonce(ctx, callerOf(ctx).Actor(), q.Get("workspace_id"), q.Get("nonce"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"upload": up})
}

// handleUploadGet serves GET /api/uploads/{upload_id}: the bytes, to those who may read the
// upload (see persist.(*Tx).UploadGet), with ranges and conditional requests. Browsers render
// it inline only for media, plain text and PDF, never sniff its type, never take it for script
// or style (servedType), and sandbox it.
func (s *Server) handleUploadGet(w http.ResponseWriter, r *http.Request) {
	if s.blobs == nil {
		s.writeError(w, r, errUploadsOff)
		return
	}
	ctx := r.Context()
	up, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.Upload, error) {
		return tx.UploadGet(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "upload_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	obj, err := s.blobs.Open(ctx, up.StorageKey)
	if errors.Is(err, blob.ErrNotFound) {
		s.logger.Error("upload object missing", "correlation_id", correlationID(ctx), "upload_id", up.ID)
		s.writeError(w, r, persist.NotFound("upload"))
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer obj.Close()
	h := w.Header()
	h.Set("Content-Type", servedType(up.ContentType))
	h.Set("Content-Disposition", uploadDisposition(up.ContentType, up.Filename))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", uploadCSP)
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "private, no-cache")
	h.Set("ETag", `"`+hex.EncodeToString(up.SHA256)+`"`)
	http.ServeContent(w, r, "", up.CreatedAt, obj)
}

// uploadDisposition is the Content-Disposition of an upload: inline for images (SVG aside, which
// can carry script), video, audio, text/plain and application/pdf; attachment otherwise; with a
// filename stripped of anything a header or a file system could trip on.
func uploadDisposition(contentType, filename string) string {
	kind := "attachment"
	if inlineType(contentType) {
		kind = "inline"
	}
	name := strings.Map(func(r rune) rune {
		switch r {
		case '"', '\\', '/', ';':
			return '_'
		}
		return r
	}, persist.CleanFilename(filename))
	if v := mime.FormatMediaType(kind, map[string]string{"filename": name}); v != "" {
		return v
	}
	return kind
}

// inlineType reports whether a content type may be shown in the browser rather than downloaded:
// a passive type, SVG aside, which can carry script when opened as a document.
func inlineType(contentType string) bool {
	mt, ok := passiveType(contentType)
	return ok && mt != "image/svg+xml"
}

// servedType is the Content-Type an upload is answered with: its stored type when that is a
// passive one, application/octet-stream otherwise. Under nosniff a browser refuses to run a
// response as script unless its type is a JavaScript type, and as a stylesheet unless it is
// text/css; the attachment disposition does not stop a <script src> or <link rel=stylesheet>
// on the app's own origin, so the type must. Clients read the declared type from the upload's
// metadata, which keeps it as stored.
func servedType(contentType string) string {
	mt, ok := passiveType(contentType)
	if !ok {
		return "application/octet-stream"
	}
	_, params, _ := mime.ParseMediaType(contentType)
	if v := mime.FormatMediaType(mt, params); v != "" {
		return v
	}
	return mt
}

// passiveType returns the media type of contentType and whether it is one a browser only ever
// shows — an image, video, audio, plain text or PDF — and never runs as script or style.
func passiveType(contentType string) (string, bool) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", false
	}
	switch {
	case strings.HasPrefix(mt, "image/"), strings.HasPrefix(mt, "video/"), strings.HasPrefix(mt, "audio/"):
		return mt, true
	}
	return mt, mt == "text/plain" || mt == "application/pdf"
}

// handleAttachmentCreate serves POST /api/messages/{message_id}/attachments {upload_id}: links an
// upload to the caller's message; {message, event, events}, the event fields left out when the
// upload was attached already.
func (s *Server) handleAttachmentCreate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		UploadID string `json:"upload_id"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.MessageChanged, error) {
		return tx.UploadAttach(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "message_id"), req.UploadID)
	})
	s.writeMessageChanged(w, r, res, err)
}
