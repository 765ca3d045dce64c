package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestUploadGet(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	c := newChat(t, h)

	t.Run("Headers", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			contentType, filename, disposition, served string
		}{
			{"image/png", "cat.png", `inline; filename=cat.png`, "image/png"},
			{"image/svg+xml", "logo.svg", `attachment; filename=logo.svg`, "image/svg+xml"},
			{"video/mp4", "clip.mp4", `inline; filename=clip.mp4`, "video/mp4"},
			{"audio/ogg", "song.ogg", `inline; filename=song.ogg`, "audio/ogg"},
			{"text/plain; charset=utf-8", "notes.txt", `inline; filename=notes.txt`, "text/plain; charset=utf-8"},
			{"application/pdf", "paper.pdf", `inline; filename=paper.pdf`, "application/pdf"},
			{"text/html", "page.html", `attachment; filename=page.html`, "application/octet-stream"},
			{"application/javascript", "x.js", `attachment; filename=x.js`, "application/octet-stream"},
			{"", "blob", `attachment; filename=blob`, "application/octet-stream"},
			{"application/zip", `we"ird\name;.zip`, `attachment; filename=name_.zip`, "application/octet-stream"},
			{"application/zip", `say "hi".zip`, `attachment; filename="say _hi_.zip"`, "application/octet-stream"},
			{"application/zip", "résumé.zip", `attachment; filename*=utf-8''r%C3%A9sum%C3%A9.zip`, "application/octet-stream"},
		} {
			up := uploadOf(t, upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID,
				filePart{Name: tc.filename, ContentType: tc.contentType, Data: []byte("<script>alert(1)</script>")}))
			r := h.Get(t, uploadPath(up.ID), c.alice.Token)
			r.RequireStatus(t, http.StatusOK)
			require.Equal(t, tc.disposition, r.Header.Get("Content-Disposition"), tc.contentType)
			require.Equal(t, tc.served, r.Header.Get("Content-Type"), "never sniffed, never runnable")
			require.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"))
			csp := r.Header.Get("Content-Security-Policy")
			require.Contains(t, csp, "sandbox")
			require.Contains(t, csp, "default-src 'none'")
			require.NotEmpty(t, r.Header.Get("ETag"))
			require.Equal(t, "<script>alert(1)</script>", string(r.Body))
		}
	})

	// An upload must never run as script or style of the app, even from a <script src> or
	// <link rel=stylesheet> an injection might put on the app's own origin, where neither the
	// attachment disposition nor the upload's sandbox applies: under nosniff only the type can
	// stop it, so no upload is ever answered with a JavaScript type or text/css.
	t.Run("NeverScriptOrStyle", func(t *testing.T) {
		t.Parallel()
		// The JavaScript MIME type essences of the WHATWG MIME Sniffing standard, text/css, and
		// the document types that run script when navigated to.
		for _, declared := range []string{
			"application/ecmascript", "application/javascript", "application/x-ecmascript",
			"application/x-javascript", "text/ecmascript", "text/javascript", "text/javascript1.0",
			"text/javascript1.1", "text/javascript1.2", "text/javascript1.3", "text/javascript1.4",
			"text/javascript1.5", "text/jscript", "text/livescript", "text/x-ecmascript",
			"text/x-javascript", "TEXT/JavaScript; charset=utf-8", "text/javascript;x=\"image/png\"",
			"text/css", "text/css; charset=utf-8", "text/html", "application/xhtml+xml",
			"text/xml", "application/xml", "application/json", "application/wasm", "image/png, text/javascript",
		} {
			up := uploadOf(t, upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID,
				filePart{Name: "x.js", ContentType: declared, Data: []byte("alert(document.cookie)")}))
			r := h.Get(t, uploadPath(up.ID), c.alice.Token)
			r.RequireStatus(t, http.StatusOK)
			require.Equal(t, "application/octet-stream", r.Header.Get("Content-Type"), declared)
			require.Equal(t, "attachment; filename=x.js", r.Header.Get("Content-Disposition"), declared)
			require.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"), declared)
		}
	})

	t.Run("RangesAndConditionalRequests", func(t *testing.T) {
		t.Parallel()
		up := uploadText(t, h, c.alice.Token, c.ws.ID, "abc.txt", "abcdefghij")
		r := h.Do(t, servertest.Request{Method: http.MethodGet, Path: uploadPath(up.ID), Token: c.mod.Token,
			Header: map[string]string{"Range": "bytes=2-4"}})
		r.RequireStatus(t, http.StatusPartialContent)
		require.Equal(t, "cde", string(r.Body))
		require.Equal(t, "bytes 2-4/10", r.Header.Get("Content-Range"))
		etag := h.Get(t, uploadPath(up.ID), c.mod.Token).Header.Get("ETag")
		h.Do(t, servertest.Request{Method: http.MethodGet, Path: uploadPath(up.ID), Token: c.mod.Token,
			Header: map[string]string{"If-None-Match": etag}}).RequireStatus(t, http.StatusNotModified)
	})

	t.Run("OnlyMembersOfItsWorkspace", func(t *testing.T) {
		t.Parallel()
		up := uploadText(t, h, c.alice.Token, c.ws.ID, "secret.txt", "top secret bytes")
		outsider := h.NewUser(t)
		elsewhere := persisttest.Workspace(t, h.Store, outsider.User.ID)
		_, strayToken := persisttest.Bot(t, h.Store, outsider.User, elsewhere.ID, nil)
		_, noRead := persisttest.Bot(t, h.Store, c.owner.User, c.ws.ID, &persisttest.BotOpts{Scopes: []string{persist.ScopeUploadsWrite}})
		_, reader := persisttest.Bot(t, h.Store, c.owner.User, c.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		guest := c.join(t, persist.RoleGuest)
		for _, tc := range []struct {
			name, token string
			status      int
			code        persist.Code
		}{
			{"Outsider", outsider.Token, http.StatusNotFound, persist.CodeNotFound},
			{"TokenOfAnotherWorkspace", strayToken.Token, http.StatusNotFound, persist.CodeNotFound},
			{"WaitingRoomGuest", guest.Token, http.StatusNotFound, persist.CodeNotFound},
			{"TokenWithoutMessagesRead", noRead.Token, http.StatusForbidden, persist.CodeMissingScope},
			{"NoCredentials", "", http.StatusUnauthorized, persist.CodeUnauthenticated},
		} {
			r := h.Get(t, uploadPath(up.ID), tc.token)
			r.RequireError(t, tc.status, tc.code)
			require.NotContains(t, string(r.Body), "top secret", tc.name)
			require.NotContains(t, string(r.Body), "secret.txt", tc.name)
		}
		// The same answer as for an upload that does not exist.
		h.Get(t, uploadPath("upl_01j00000000000000000000000"), outsider.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		r := h.Get(t, uploadPath(up.ID), reader.Token)
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, "top secret bytes", string(r.Body))
	})

	t.Run("GuestsReadWhatTheWaitingRoomShows", func(t *testing.T) {
		t.Parallel()
		guest := c.join(t, persist.RoleGuest)
		shown := uploadText(t, h, c.alice.Token, c.ws.ID, "welcome.txt", "welcome")
		hidden := uploadText(t, h, c.alice.Token, c.ws.ID, "hidden.txt", "hidden")
		c.post(t, c.alice, channelMessages(c.guestRoom.ID), map[string]any{"body": "read me", "upload_id": shown.ID}).
			RequireStatus(t, http.StatusCreated)
		c.post(t, c.alice, channelMessages(c.general.ID), map[string]any{"body": "members only", "upload_id": hidden.ID}).
			RequireStatus(t, http.StatusCreated)
		r := h.Get(t, uploadPath(shown.ID), guest.Token)
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, "welcome", string(r.Body))
		h.Get(t, uploadPath(hidden.ID), guest.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	})

	t.Run("MissingObjectIs404", func(t *testing.T) {
		t.Parallel()
		up := uploadText(t, h, c.alice.Token, c.ws.ID, "gone.txt", "gone")
		require.NoError(t, h.Uploads.Delete(t.Context(), objectOf(t, h, c.alice, up.ID)))
		h.Get(t, uploadPath(up.ID), c.alice.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	})
}

func TestWorkspaceIcon(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t)
	path := e.wsPath("")
	up := uploadOf(t, upload(t, e.h, e.owner.Token, "?workspace_id="+e.ws.ID, filePart{Name: "icon.png", ContentType: "image/png", Data: pngImage(t, 4, 4)}))

	t.Run("AnUploadOfTheWorkspace", func(t *testing.T) {
		t.Parallel()
		for _, ref := range []string{"/api/uploads/" + up.ID, up.ID} {
			r := e.patch(t, path, e.owner.Token, map[string]any{"icon_url": ref})
			r.RequireStatus(t, http.StatusOK)
			require.Equal(t, "/api/uploads/"+up.ID, e.obj(t, r, "workspace")["icon_url"])
		}
		got := e.h.Get(t, path, e.owner.Token)
		require.Equal(t, "/api/uploads/"+up.ID, e.obj(t, got, "workspace")["icon_url"])
		guest := e.join(t, persist.RoleGuest)
		e.h.Get(t, uploadPath(up.ID), guest.Token).RequireStatus(t, http.StatusOK)
	})

	t.Run("OthersAreRefused", func(t *testing.T) {
		t.Parallel()
		other := persisttest.Workspace(t, e.h.Store, e.owner.User.ID)
		foreign := uploadText(t, e.h, e.owner.Token, other.ID, "other.txt", "other")
		for _, ref := range []string{
			"/api/uploads/" + foreign.ID, foreign.ID, "/api/uploads/upl_01jabcdefghjkmnpqrstvwxyz0",
			"https://example.com/api/uploads/" + up.ID, "/api/uploads/" + up.ID + "/x", "/api/files/" + up.ID,
		} {
			e.patch(t, path, e.owner.Token, map[string]any{"icon_url": ref}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
		r := e.patch(t, "/api/workspaces/"+other.ID, e.owner.Token, map[string]any{"icon_url": ""})
		r.RequireStatus(t, http.StatusOK)
		require.NotContains(t, e.obj(t, r, "workspace"), "icon_url")
	})
}

// requireOneAttachment checks that a message carries exactly the upload up.
func requireOneAttachment(t *testing.T, m persist.Message, up persist.Upload) {
	t.Helper()
	require.Len(t, m.Attachments, 1, "message %s", m.ID)
	got := m.Attachments[0]
	require.Equal(t, up.ID, got.ID)
	require.Equal(t, up.Filename, got.Filename)
	require.Equal(t, up.ContentType, got.ContentType)
	require.Equal(t, up.ByteSize, got.ByteSize)
	require.True(t, strings.HasSuffix(got.URL, up.ID))
}
