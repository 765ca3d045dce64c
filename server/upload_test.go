package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestUploadCreate(t *testing.T) {
	t.Parallel()

	t.Run("StoresBytesAndMetadata", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		c := newChat(t, h)
		img := pngImage(t, 3, 2)
		r := upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID, filePart{Name: "C:\\photos\\cat.png", ContentType: "image/png", Data: img})
		r.RequireStatus(t, http.StatusCreated)
		up := uploadOf(t, r)
		require.True(t, strings.HasPrefix(up.ID, persist.PrefixUpload), up.ID)
		require.Equal(t, c.ws.ID, up.WorkspaceID)
		require.Equal(t, c.alice.User.ID, up.OwnerID)
		require.Equal(t, "cat.png", up.Filename, "the original name, without its path")
		require.Equal(t, "image/png", up.ContentType)
		require.Equal(t, int64(len(img)), up.ByteSize)
		require.Equal(t, 3, *up.Width)
		require.Equal(t, 2, *up.Height)
		require.Equal(t, "/api/uploads/"+up.ID, up.URL)
		require.NotContains(t, string(r.Body), "upload-", "the storage key is never shown")

		key := objectOf(t, h, c.alice, up.ID)
		require.Equal(t, []string{key}, objects(t, h), "one object, named by its key")
		require.Regexp(t, `^upload-[a-z2-7]{32}$`, key, "upload-<random>, not the filename")
		stored, err := os.ReadFile(h.Uploads.Path(key))
		require.NoError(t, err)
		require.Equal(t, img, stored)
		require.Empty(t, incoming(t, h))

		got := h.Get(t, uploadPath(up.ID), c.mod.Token)
		got.RequireStatus(t, http.StatusOK)
		require.Equal(t, img, got.Body, "any member of the workspace reads it")
	})

	t.Run("ContentTypes", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		c := newChat(t, h)
		for _, tc := range []struct{ declared, stored string }{
			{"", persist.DefaultContentType},
			{"not a type", persist.DefaultContentType},
			{"Text/Plain; charset=UTF-8", "text/plain; charset=UTF-8"},
			{"image/png", "image/png"},
		} {
			r := upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID, filePart{Name: "f", ContentType: tc.declared, Data: []byte("x")})
			r.RequireStatus(t, http.StatusCreated)
			up := uploadOf(t, r)
			require.Equal(t, tc.stored, up.ContentType, "declared %q", tc.declared)
			require.Nil(t, up.Width, "no dimensions for what is not an image")
		}
	})

	t.Run("WorkspaceAsFormField", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		c := newChat(t, h)
		r := upload(t, h, c.alice.Token, "", filePart{Name: "a.txt", ContentType: "text/plain", Data: []byte("hi")}, "workspace_id", c.ws.ID)
		r.RequireStatus(t, http.StatusCreated)
		require.Equal(t, c.ws.ID, uploadOf(t, r).WorkspaceID)

		outsider := h.NewUser(t)
		upload(t, h, outsider.Token, "", filePart{Name: "a.txt", Data: []byte("hi")}, "workspace_id", c.ws.ID).
			RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		other := persisttest.Workspace(t, h.Store, c.alice.User.ID)
		upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID, filePart{Name: "a.txt", Data: []byte("hi")}, "workspace_id", other.ID).
			RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})

	t.Run("BadRequests", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		c := newChat(t, h)
		f := filePart{Name: "a.txt", Data: []byte("hi")}
		upload(t, h, c.alice.Token, "", f).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		upload(t, h, c.alice.Token, "?nonce=n1", f, "workspace_id", c.ws.ID).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		// SPEC §Limits: an upload nonce is at most 128 characters.
		upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID+"&nonce="+strings.Repeat("n", 129), f).
			RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		h.Post(t, "/api/uploads?workspace_id="+c.ws.ID, c.alice.Token, map[string]any{"file": "x"}).
			RequireError(t, http.StatusUnsupportedMediaType, persist.CodeUnsupportedMediaType)
		body, ct := multipartBody(t, f)
		body = bytes.Replace(body, []byte(`name="file"`), []byte(`name="other"`), 1)
		h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/uploads?workspace_id=" + c.ws.ID, Token: c.alice.Token,
			Body: body, Header: map[string]string{"Content-Type": ct}}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		truncated, ct := multipartBody(t, filePart{Name: "a.txt", Data: bytes.Repeat([]byte("x"), 1000)})
		h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/uploads?workspace_id=" + c.ws.ID, Token: c.alice.Token,
			Body: truncated[:500], Header: map[string]string{"Content-Type": ct}}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		require.Empty(t, objects(t, h))
		require.Empty(t, incoming(t, h), "a failed upload leaves no temporary file")
	})

	t.Run("TooLargeIs413AndStoresNothing", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		c := newChat(t, h)
		head, ct := multipartBody(t, filePart{Name: "big.bin", Data: nil})
		// The file part's content, then the closing boundary: one byte more than the limit in all.
		closing := head[bytes.LastIndex(head, []byte("\r\n--")):]
		opening := head[:bytes.LastIndex(head, []byte("\r\n--"))]
		size := 64<<20 + 1 - len(opening) - len(closing) // SPEC §Limits: 64 MiB per request
		body := io.MultiReader(bytes.NewReader(opening), io.LimitReader(zeros{}, int64(size)), bytes.NewReader(closing))
		h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/uploads?workspace_id=" + c.ws.ID + "&nonce=big",
			Token: c.alice.Token, Body: body, Header: map[string]string{"Content-Type": ct}}).
			RequireError(t, http.StatusRequestEntityTooLarge, persist.CodeBodyTooLarge)
		require.Empty(t, objects(t, h))
		require.Empty(t, incoming(t, h))
		h.Get(t, "/api/uploads/by-nonce?workspace_id="+c.ws.ID+"&nonce=big", c.alice.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)

		// Just under the limit is fine.
		body = io.MultiReader(bytes.NewReader(opening), io.LimitReader(zeros{}, int64(size-1)), bytes.NewReader(closing))
		r := h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/uploads?workspace_id=" + c.ws.ID,
			Token: c.alice.Token, Body: body, Header: map[string]string{"Content-Type": ct}})
		r.RequireStatus(t, http.StatusCreated)
		require.Equal(t, int64(size-1), uploadOf(t, r).ByteSize)
	})

	t.Run("RefusedToWhoCannotUpload", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		c := newChat(t, h)
		guest := c.join(t, persist.RoleGuest)
		timedOut, blocked := c.join(t, persist.RoleMember), c.join(t, persist.RoleMember)
		c.moderate(t, timedOut, map[string]any{"timeout_minutes": 30})
		c.moderate(t, blocked, map[string]any{"blocked": true})
		f := filePart{Name: "a.txt", Data: []byte("hi")}
		for _, who := range []servertest.Actor{guest, timedOut, blocked, h.NewUser(t)} {
			upload(t, h, who.Token, "?workspace_id="+c.ws.ID, f).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
			upload(t, h, who.Token, "?workspace_id="+c.ws.ID+"&nonce=n", f).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		}
		upload(t, h, "", "?workspace_id="+c.ws.ID, f).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		require.Empty(t, objects(t, h))

		_, reader := persisttest.Bot(t, h.Store, c.owner.User, c.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		upload(t, h, reader.Token, "?workspace_id="+c.ws.ID, f).RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
		_, writer := persisttest.Bot(t, h.Store, c.owner.User, c.ws.ID, nil)
		r := upload(t, h, writer.Token, "?workspace_id="+c.ws.ID, f)
		r.RequireStatus(t, http.StatusCreated)
		other := persisttest.Workspace(t, h.Store, c.owner.User.ID)
		upload(t, h, writer.Token, "?workspace_id="+other.ID, f).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestUploadNonce(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	c := newChat(t, h)
	first := upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID+"&nonce=n-1", filePart{Name: "one.txt", ContentType: "text/plain", Data: []byte("one")})
	first.RequireStatus(t, http.StatusCreated)
	orig := uploadOf(t, first)
	require.Equal(t, "n-1", orig.Nonce)

	t.Run("ReplayAnswers200WithTheOriginal", func(t *testing.T) {
		t.Parallel()
		r := upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID+"&nonce=n-1", filePart{Name: "two.txt", Data: []byte("two")})
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, orig, uploadOf(t, r))
		empty := h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/uploads?workspace_id=" + c.ws.ID + "&nonce=n-1", Token: c.alice.Token})
		empty.RequireStatus(t, http.StatusOK)
		require.Equal(t, orig.ID, uploadOf(t, empty).ID, "no body at all")
	})

	t.Run("ReplayDoesNotReadTheBody", func(t *testing.T) {
		t.Parallel()
		// A body that never arrives: a server reading it would wait past the deadline.
		pr, pw := io.Pipe()
		defer pw.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL+"/api/uploads?workspace_id="+c.ws.ID+"&nonce=n-1", pr)
		require.NoError(t, err)
		req.ContentLength = 1 << 20
		req.Header.Set("Authorization", "Bearer "+c.alice.Token)
		req.Header.Set("Content-Type", "multipart/form-data; boundary=never")
		resp, err := (&http.Client{}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Contains(t, string(raw), orig.ID)
	})

	t.Run("OtherWorkspaceIs409", func(t *testing.T) {
		t.Parallel()
		other := persisttest.Workspace(t, h.Store, c.alice.User.ID)
		upload(t, h, c.alice.Token, "?workspace_id="+other.ID+"&nonce=n-1", filePart{Name: "x", Data: []byte("x")}).
			RequireError(t, http.StatusConflict, persist.CodeConflict)
		h.Get(t, "/api/uploads/by-nonce?workspace_id="+other.ID+"&nonce=n-1", c.alice.Token).RequireError(t, http.StatusConflict, persist.CodeConflict)
	})

	t.Run("NoncesArePerUploader", func(t *testing.T) {
		t.Parallel()
		r := upload(t, h, c.mod.Token, "?workspace_id="+c.ws.ID+"&nonce=n-1", filePart{Name: "mine.txt", Data: []byte("mine")})
		r.RequireStatus(t, http.StatusCreated)
		require.NotEqual(t, orig.ID, uploadOf(t, r).ID)
	})

	t.Run("ByNonce", func(t *testing.T) {
		t.Parallel()
		requireHeaders := func(r *servertest.Response) {
			t.Helper()
			require.Equal(t, "supported", r.Header.Get("X-Natter-Upload-Nonce"), "%d", r.Status)
			require.Equal(t, "supported", r.Header.Get("X-ClickClack-Upload-Nonce"), "%d", r.Status)
		}
		hit := h.Get(t, "/api/uploads/by-nonce?workspace_id="+c.ws.ID+"&nonce=n-1", c.alice.Token)
		hit.RequireStatus(t, http.StatusOK)
		require.Equal(t, orig, uploadOf(t, hit))
		requireHeaders(hit)
		for _, tc := range []struct {
			token, query string
			status       int
			code         persist.Code
		}{
			{c.alice.Token, "?workspace_id=" + c.ws.ID + "&nonce=missing", http.StatusNotFound, persist.CodeNotFound},
			{c.owner.Token, "?workspace_id=" + c.ws.ID + "&nonce=n-1", http.StatusNotFound, persist.CodeNotFound},
			{c.alice.Token, "?workspace_id=" + c.ws.ID, http.StatusBadRequest, persist.CodeInvalidRequest},
			{h.NewUser(t).Token, "?workspace_id=" + c.ws.ID + "&nonce=n-1", http.StatusForbidden, persist.CodeForbidden},
			{"", "?workspace_id=" + c.ws.ID + "&nonce=n-1", http.StatusUnauthorized, persist.CodeUnauthenticated},
		} {
			r := h.Get(t, "/api/uploads/by-nonce"+tc.query, tc.token)
			r.RequireError(t, tc.status, tc.code)
			requireHeaders(r)
			require.NotContains(t, string(r.Body), orig.ID)
		}
	})

	t.Run("ConcurrentSameNonceStoresOne", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		c := newChat(t, h)
		results := make([]*servertest.Response, 4)
		var g errgroup.Group
		for i := range results {
			g.Go(func() error {
				results[i] = upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID+"&nonce=race", filePart{Name: "r.txt", Data: []byte("race")})
				return nil
			})
		}
		require.NoError(t, g.Wait())
		ids := map[string]bool{}
		created := 0
		for _, r := range results {
			require.Contains(t, []int{http.StatusOK, http.StatusCreated}, r.Status, "%s", r.Body)
			if r.Status == http.StatusCreated {
				created++
			}
			ids[uploadOf(t, r).ID] = true
		}
		require.Equal(t, 1, created)
		require.Len(t, ids, 1)
		require.Len(t, objects(t, h), 1, "the losers' objects are deleted")
	})
}
