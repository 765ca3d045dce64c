package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server"
)

func meID(t *testing.T, r *servertest.Response) string {
	t.Helper()
	r.RequireStatus(t, http.StatusOK)
	return r.JSON(t)["user"].(map[string]any)["id"].(string)
}

func TestCallerIdentification(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	alice, bob := h.NewUser(t), h.NewUser(t)
	cookie := func(token string) *http.Cookie { return &http.Cookie{Name: "cc_session", Value: token} }

	t.Run("BearerSession", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, alice.User.ID, meID(t, h.Get(t, "/api/me", alice.Token)))
	})
	t.Run("Cookie", func(t *testing.T) {
		t.Parallel()
		r := h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Cookies: []*http.Cookie{cookie(bob.Token)}})
		require.Equal(t, bob.User.ID, meID(t, r))
	})
	t.Run("BearerBeatsCookie", func(t *testing.T) {
		t.Parallel()
		r := h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Token: alice.Token, Cookies: []*http.Cookie{cookie(bob.Token)}})
		require.Equal(t, alice.User.ID, meID(t, r))
	})
	t.Run("DuplicateCookiesRefused", func(t *testing.T) {
		t.Parallel()
		r := h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Cookies: []*http.Cookie{cookie(alice.Token), cookie(bob.Token)}})
		r.RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})
	t.Run("UnknownBearerIs401", func(t *testing.T) {
		t.Parallel()
		h.Get(t, "/api/me", "sst_unknown").RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		h.Get(t, "/api/me", "something-else").RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})
	t.Run("NoCredentialsIs401", func(t *testing.T) {
		t.Parallel()
		h.Get(t, "/api/me", "").RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})
	for _, header := range []string{"X-Natter-User", "X-ClickClack-User"} {
		t.Run("LocalImpersonation/"+header, func(t *testing.T) {
			t.Parallel()
			r := h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Header: map[string]string{header: bob.User.ID}})
			require.Equal(t, bob.User.ID, meID(t, r))
		})
		t.Run("ImpersonationIgnoredForNonLocalHost/"+header, func(t *testing.T) {
			t.Parallel()
			r := h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me",
				Header: map[string]string{header: bob.User.ID, "Host": "chat.example.com"}})
			r.RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		})
	}
	t.Run("ImpersonationOffOutsideDevelopment", func(t *testing.T) {
		t.Parallel()
		prod := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.LocalImpersonation = false }))
		victim := prod.NewUser(t)
		r := prod.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Header: map[string]string{"X-Natter-User": victim.User.ID}})
		r.RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})
	t.Run("ImpersonatingUnknownUserIs401", func(t *testing.T) {
		t.Parallel()
		r := h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Header: map[string]string{"X-Natter-User": "usr_nobody"}})
		r.RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})
}

func TestDevFallback(t *testing.T) {
	t.Parallel()
	t.Run("OffByDefault", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		h.NewUser(t)
		h.Get(t, "/api/me", "").RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})
	t.Run("FirstUserForLocalRequests", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.DevBootstrap = true }))
		first := h.NewUser(t)
		h.NewUser(t)
		require.Equal(t, first.User.ID, meID(t, h.Get(t, "/api/me", "")))
		r := h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Header: map[string]string{"Host": "chat.example.com"}})
		r.RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})
	// A page on another site can post to 127.0.0.1 with no credentials; the development user
	// must not act for it (issue 22, defect 6), while curl and the CLI (no Origin, no
	// Sec-Fetch-Site) and a same-origin page still do.
	t.Run("DevUserRefusesCrossSiteWrites", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.DevBootstrap = true; c.LocalImpersonation = true }))
		first := h.NewUser(t)
		other := h.NewUser(t)
		patch := func(header map[string]string, body string) *servertest.Response {
			return h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Body: body, Header: header})
		}
		for _, id := range []string{"", other.User.ID} {
			for _, header := range []map[string]string{
				{"Origin": "https://evil.example", "Content-Type": "text/plain"},
				{"Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site"},
				{"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"},
			} {
				if id != "" {
					header["X-Natter-User"] = id
				}
				patch(header, `{"display_name":"Pwned"}`).RequireError(t, http.StatusForbidden, persist.CodeCSRF)
			}
		}
		for _, u := range []servertest.Actor{first, other} {
			me := h.Get(t, "/api/me", u.Token)
			require.NotEqual(t, "Pwned", me.JSON(t)["user"].(map[string]any)["display_name"])
		}
		// curl (no browser headers), a same-origin page, and the impersonation header from curl.
		patch(nil, `{"display_name":"Curl"}`).RequireStatus(t, http.StatusOK)
		patch(map[string]string{"Origin": h.URL, "Sec-Fetch-Site": "same-origin"}, `{"display_name":"Page"}`).RequireStatus(t, http.StatusOK)
		patch(map[string]string{"X-Natter-User": other.User.ID}, `{"display_name":"Other"}`).RequireStatus(t, http.StatusOK)
		// Bearer tokens are not the development user: a cross-site Origin changes nothing for them.
		h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: first.Token, Body: map[string]string{"display_name": "Bearer"},
			Header: map[string]string{"Origin": "https://evil.example"}}).RequireStatus(t, http.StatusOK)
	})
	t.Run("SocketsAsTheFirstUserAndProfileChangesAtOnce", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.DevBootstrap = true }))
		first := h.NewUser(t)
		ws := persisttest.Workspace(t, h.Store, first.User.ID)
		// WebSocket upgrades share the fallback's look-up; every one opens as the first user.
		for range 3 {
			_, status := h.DialSocket(t, servertest.Dial{Path: "/api/realtime/ws?workspace_id=" + ws.ID})
			require.Equal(t, http.StatusSwitchingProtocols, status)
		}
		// Other requests read the user afresh: a change shows at once.
		h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Body: map[string]string{"display_name": "Renamed"},
			Header: map[string]string{"X-Natter-CSRF": "1"}}).RequireStatus(t, http.StatusOK)
		me := h.Get(t, "/api/me", "")
		me.RequireStatus(t, http.StatusOK)
		require.Equal(t, "Renamed", me.JSON(t)["user"].(map[string]any)["display_name"])
	})
}

func TestSessionLifetime(t *testing.T) {
	t.Parallel()
	clock := persisttest.NewClock() // the relay reads it concurrently
	h := servertest.New(t, servertest.WithClock(clock))
	me := h.NewUser(t)
	h.Get(t, "/api/me", me.Token).RequireStatus(t, http.StatusOK)
	clock.Advance(persist.SessionLifetime + time.Second)
	h.Get(t, "/api/me", me.Token).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	me := h.NewUser(t)
	patch := func(header map[string]string, token string, cookie bool) *servertest.Response {
		req := servertest.Request{Method: http.MethodPatch, Path: "/api/me", Body: map[string]string{"display_name": "Changed"}, Header: header}
		if cookie {
			req.Cookies = []*http.Cookie{{Name: "cc_session", Value: me.Token}}
		} else {
			req.Token = token
		}
		return h.Do(t, req)
	}
	t.Run("CookieWithoutHeaderRefused", func(t *testing.T) {
		t.Parallel()
		patch(nil, "", true).RequireError(t, http.StatusForbidden, persist.CodeCSRF)
	})
	t.Run("CookieCrossSiteRefused", func(t *testing.T) {
		t.Parallel()
		patch(map[string]string{"X-Natter-CSRF": "1", "Origin": "https://evil.example"}, "", true).RequireError(t, http.StatusForbidden, persist.CodeCSRF)
		patch(map[string]string{"X-Natter-CSRF": "1", "Sec-Fetch-Site": "cross-site"}, "", true).RequireError(t, http.StatusForbidden, persist.CodeCSRF)
	})
	t.Run("CookieSameOriginWithHeaderAllowed", func(t *testing.T) {
		t.Parallel()
		patch(map[string]string{"X-Natter-CSRF": "1", "Origin": h.URL, "Sec-Fetch-Site": "same-origin"}, "", true).RequireStatus(t, http.StatusOK)
		patch(map[string]string{"X-ClickClack-CSRF": "1"}, "", true).RequireStatus(t, http.StatusOK)
	})
	t.Run("BearerNeedsNoHeader", func(t *testing.T) {
		t.Parallel()
		patch(nil, me.Token, false).RequireStatus(t, http.StatusOK)
	})
	t.Run("SafeMethodsNeedNoHeader", func(t *testing.T) {
		t.Parallel()
		r := h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Cookies: []*http.Cookie{{Name: "cc_session", Value: me.Token}}})
		r.RequireStatus(t, http.StatusOK)
	})
}

func TestCookieNamespace(t *testing.T) {
	t.Parallel()
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.CookieNamespace = "blue" }))
	me := h.NewUser(t)
	r := h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Cookies: []*http.Cookie{{Name: "cc_session_blue", Value: me.Token}}})
	r.RequireStatus(t, http.StatusOK)
	r = h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Cookies: []*http.Cookie{{Name: "cc_session", Value: me.Token}}})
	r.RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
}

func TestLogout(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	me := h.NewUser(t)
	other := persisttest.Session(t, h.Store, me.User.ID)

	r := h.Post(t, "/api/auth/logout", me.Token, nil)
	r.RequireStatus(t, http.StatusOK)
	require.Contains(t, r.Header.Get("Set-Cookie"), "cc_session=;")
	require.Contains(t, r.Header.Get("Set-Cookie"), "Max-Age=0")
	h.Get(t, "/api/me", me.Token).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	h.Post(t, "/api/auth/logout", me.Token, nil).RequireStatus(t, http.StatusOK) // idempotent
	h.Post(t, "/api/auth/logout", "", nil).RequireStatus(t, http.StatusOK)
	h.Get(t, "/api/me", other).RequireStatus(t, http.StatusOK) // only the presented session ends

	// By cookie: revokes the cookie's session.
	r = h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/auth/logout",
		Header: map[string]string{"X-Natter-CSRF": "1"}, Cookies: []*http.Cookie{{Name: "cc_session", Value: other}}})
	r.RequireStatus(t, http.StatusOK)
	ctx := context.Background()
	err := h.Store.WithTx(ctx, func(tx *persist.Tx) error { _, _, err := tx.SessionResolve(ctx, other); return err })
	require.Error(t, err)
}
