package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server"
)

func devAuth(c *server.Config) { c.DevAuth = true }

func requestMagicLink(t *testing.T, h *servertest.Harness, email string) string {
	t.Helper()
	r := h.Post(t, "/api/auth/magic/request", "", map[string]string{"email": email, "display_name": "Nia"})
	r.RequireStatus(t, http.StatusCreated)
	token := r.JSON(t)["token"].(string)
	require.True(t, strings.HasPrefix(token, "mgt_"))
	return token
}

func TestMagicLinkRequest(t *testing.T) {
	t.Parallel()
	t.Run("OffWithoutDevAuth", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		h.Post(t, "/api/auth/magic/request", "", map[string]string{"email": "a@example.com"}).
			RequireError(t, http.StatusNotImplemented, persist.CodeNotImplemented)
	})
	t.Run("LocalOnly", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t, servertest.WithConfig(devAuth))
		r := h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/auth/magic/request",
			Body: map[string]string{"email": "a@example.com"}, Header: map[string]string{"Host": "chat.example.com"}})
		r.RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})
	t.Run("BadEmailIs400", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t, servertest.WithConfig(devAuth))
		h.Post(t, "/api/auth/magic/request", "", map[string]string{"email": "not-an-email"}).
			RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})
}

func TestMagicLinkConsume(t *testing.T) {
	t.Parallel()
	consume := func(h *servertest.Harness, token string, header map[string]string) *servertest.Response {
		return h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/auth/magic/consume",
			Body: map[string]string{"token": token}, Header: header})
	}

	t.Run("CreatesSessionAndCookie", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t, servertest.WithConfig(devAuth))
		r := consume(h, requestMagicLink(t, h, "Nia@Example.com"), nil)
		r.RequireStatus(t, http.StatusOK)
		body := r.JSON(t)
		session := body["session"].(map[string]any)
		require.Equal(t, body["token"], session["token"])
		require.True(t, strings.HasPrefix(body["token"].(string), "sst_"))
		user := body["user"].(map[string]any)
		require.Equal(t, "nia@example.com", user["email"], "emails are lowercased")
		require.Equal(t, "Nia", user["display_name"])
		cookie := r.Header.Get("Set-Cookie")
		require.Contains(t, cookie, "cc_session="+body["token"].(string))
		require.Contains(t, cookie, "HttpOnly")
		require.NotContains(t, cookie, "Secure", "local development over HTTP")
		require.Equal(t, user["id"], meID(t, h.Get(t, "/api/me", body["token"].(string))))

		// The same email signs in to the same account.
		again := consume(h, requestMagicLink(t, h, "nia@example.com"), nil).JSON(t)
		require.Equal(t, user["id"], again["user"].(map[string]any)["id"])
	})
	t.Run("SingleUse", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t, servertest.WithConfig(devAuth))
		token := requestMagicLink(t, h, "once@example.com")
		consume(h, token, nil).RequireStatus(t, http.StatusOK)
		consume(h, token, nil).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		consume(h, "mgt_unknown", nil).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})
	t.Run("NeedsJSONContentType", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t, servertest.WithConfig(devAuth))
		token := requestMagicLink(t, h, "form@example.com")
		r := consume(h, token, map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		r.RequireError(t, http.StatusUnsupportedMediaType, persist.CodeUnsupportedMediaType)
		consume(h, token, nil).RequireStatus(t, http.StatusOK) // the refused attempt spent nothing
	})
	t.Run("CrossSiteRefused", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t, servertest.WithConfig(devAuth))
		token := requestMagicLink(t, h, "xs@example.com")
		consume(h, token, map[string]string{"Origin": "https://evil.example"}).RequireError(t, http.StatusForbidden, persist.CodeCrossSite)
		consume(h, token, map[string]string{"Sec-Fetch-Site": "cross-site"}).RequireError(t, http.StatusForbidden, persist.CodeCrossSite)
		consume(h, token, map[string]string{"Origin": h.URL, "Sec-Fetch-Site": "same-origin"}).RequireStatus(t, http.StatusOK)
	})
	t.Run("SecureCookieOutsideLocalDev", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.PublicURL = "https://chat.example.com" }))
		ctxToken := adminMagicLink(t, h, "sec@example.com")
		r := consume(h, ctxToken, nil)
		r.RequireStatus(t, http.StatusOK)
		require.Contains(t, r.Header.Get("Set-Cookie"), "Secure")
	})
}

// adminMagicLink mints a token the way `natter admin magic-link create` does.
func adminMagicLink(t *testing.T, h *servertest.Harness, email string) string {
	t.Helper()
	token, err := persist.WithTxV(t.Context(), h.Store, func(tx *persist.Tx) (string, error) {
		return tx.MagicLinkCreate(t.Context(), email, "")
	})
	require.NoError(t, err)
	return token
}
