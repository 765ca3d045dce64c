package server_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server"
)

// TestTextThatPostgresCannotStore: NUL bytes and invalid UTF-8 anywhere a client sends text
// (JSON fields, ids in paths and queries, search, form and multipart fields) answer 400
// invalid_request naming the field, never 500, and change nothing.
func TestTextThatPostgresCannotStore(t *testing.T) {
	t.Parallel()
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.PasswordAuth = true }))
	owner := h.NewUser(t)
	e := &wsEnv{h: h, owner: owner, ws: persisttest.Workspace(t, h.Store, owner.User.ID)}
	general := persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")
	other := e.join(t, persist.RoleMember)
	before := len(e.h.Events(t, e.ws.ID))
	t.Cleanup(func() { require.Len(t, e.h.Events(t, e.ws.ID), before, "nothing changed") })

	nul, bad := "a\x00b", "a\xffb"
	for _, tc := range []struct {
		name   string
		req    servertest.Request
		naming string
	}{
		{"WorkspaceNameNUL", servertest.Request{Method: "POST", Path: "/api/workspaces", Body: map[string]any{"name": nul}}, "name"},
		{"WorkspaceNameInvalidUTF8", servertest.Request{Method: "POST", Path: "/api/workspaces",
			Body: []byte("{\"name\": \"a\xffb\"}")}, "name"},
		{"ChannelName", servertest.Request{Method: "POST", Path: "/api/workspaces/" + e.ws.ID + "/channels",
			Body: map[string]any{"name": nul}}, "name"},
		{"Handle", servertest.Request{Method: "PATCH", Path: "/api/me", Body: map[string]any{"handle": nul}}, "handle"},
		{"DisplayNameInvalidUTF8", servertest.Request{Method: "PATCH", Path: "/api/me",
			Body: []byte("{\"display_name\": \"\xc3\x28\"}")}, "display_name"},
		{"LoginIdentifier", servertest.Request{Method: "POST", Path: "/api/auth/password/login",
			Body: map[string]any{"identifier": nul, "password": "x"}}, "identifier"},
		{"MessageBody", servertest.Request{Method: "POST", Path: "/api/channels/" + general.ID + "/messages",
			Body: map[string]any{"body": nul}}, "body"},
		{"MessageNonce", servertest.Request{Method: "POST", Path: "/api/channels/" + general.ID + "/messages",
			Body: map[string]any{"body": "hi", "nonce": nul}}, "nonce"},
		{"DMMemberIDs", servertest.Request{Method: "POST", Path: "/api/dms",
			Body: map[string]any{"workspace_id": e.ws.ID, "member_ids": []string{other.User.ID, nul}}}, "member_ids[1]"},
		{"NestedConfig", servertest.Request{Method: "POST", Path: "/api/workspaces/" + e.ws.ID + "/app-installations",
			Body: []byte("{\"app_slug\": \"acme\", \"config\": {\"x\": [\"ok\", \"a\xffb\"]}}")}, "config.x[1]"},
		{"FieldName", servertest.Request{Method: "POST", Path: "/api/workspaces", Body: map[string]any{nul: "x", "name": "ok"}}, "field name"},
		{"IDInPath", servertest.Request{Method: "GET", Path: "/api/messages/msg_%00"}, "message_id"},
		{"InvalidUTF8IDInPath", servertest.Request{Method: "GET", Path: "/api/channels/chn_%FF/messages"}, "channel_id"},
		{"SearchQuery", servertest.Request{Method: "GET", Path: "/api/search?workspace_id=" + e.ws.ID + "&q=" + url.QueryEscape(nul)}, "q"},
		{"IDInQuery", servertest.Request{Method: "GET", Path: "/api/search?q=x&workspace_id=" + url.QueryEscape(bad)}, "workspace_id"},
		{"NonceInQuery", servertest.Request{Method: "GET", Path: "/api/messages/by-nonce?workspace_id=" + e.ws.ID +
			"&nonce=" + url.QueryEscape(nul)}, "nonce"},
		{"CursorInQuery", servertest.Request{Method: "GET", Path: "/api/workspaces/" + e.ws.ID + "/members?cursor=%00"}, "cursor"},
		{"SlashHookForm", servertest.Request{Method: "POST", Path: "/api/hooks/slash/" + general.ID,
			Body: "command=%2Fx&text=a%00b", Header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, "text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.req.Token = e.owner.Token
			r := e.h.Do(t, tc.req)
			r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
			require.Contains(t, r.JSON(t)["error"], tc.naming)
		})
	}
	t.Run("UploadFileName", func(t *testing.T) {
		t.Parallel()
		r := upload(t, e.h, e.owner.Token, "?workspace_id="+e.ws.ID, filePart{Name: bad, ContentType: "text/plain", Data: []byte("hi")})
		r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		require.Contains(t, r.JSON(t)["error"], "file name")
	})
	t.Run("UploadWorkspaceField", func(t *testing.T) {
		t.Parallel()
		r := upload(t, e.h, e.owner.Token, "", filePart{Name: "a.txt", ContentType: "text/plain", Data: []byte("hi")}, "workspace_id", bad)
		r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		require.Contains(t, r.JSON(t)["error"], "workspace_id")
	})
}
