package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server"
)

func TestCORS(t *testing.T) {
	t.Parallel()
	const app = "https://app.example.com"
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.PublicURL = app }))
	me := h.NewUser(t)
	preflight := func(origin, method, headers string) *servertest.Response {
		return h.Do(t, servertest.Request{Method: http.MethodOptions, Path: "/api/me", Header: map[string]string{
			"Origin": origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers}})
	}

	t.Run("PreflightFromThePublicOrigin", func(t *testing.T) {
		t.Parallel()
		r := preflight(app, "PATCH", "content-type, x-natter-csrf, authorization")
		r.RequireStatus(t, http.StatusNoContent)
		require.Equal(t, app, r.Header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "true", r.Header.Get("Access-Control-Allow-Credentials"))
		require.Contains(t, r.Header.Get("Access-Control-Allow-Headers"), "X-Natter-CSRF")
	})
	t.Run("PreflightRefusals", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ origin, method, headers string }{
			{"https://evil.example", "PATCH", "content-type"},
			{app, "TRACE", ""},
			{app, "POST", "x-custom"},
		} {
			r := preflight(tc.origin, tc.method, tc.headers)
			r.RequireError(t, http.StatusForbidden, persist.CodeForbidden)
			require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"), "%+v", tc)
		}
	})
	t.Run("NoWildcardNoReflection", func(t *testing.T) {
		t.Parallel()
		r := h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Token: me.Token,
			Header: map[string]string{"Origin": "https://evil.example"}})
		r.RequireStatus(t, http.StatusOK)
		require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"))
		r = h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Token: me.Token,
			Header: map[string]string{"Origin": app}})
		require.Equal(t, app, r.Header.Get("Access-Control-Allow-Origin"))
		require.Contains(t, r.Header.Values("Vary"), "Origin")
	})
	t.Run("WithoutPublicURLNothingCrossOrigin", func(t *testing.T) {
		t.Parallel()
		plain := servertest.New(t)
		r := plain.Do(t, servertest.Request{Method: http.MethodOptions, Path: "/api/me", Header: map[string]string{
			"Origin": app, "Access-Control-Request-Method": "GET"}})
		r.RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"))
	})
}
