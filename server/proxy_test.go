package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/server/accessproxy"
	"github.com/natterchat/natter/server/accessproxy/accessproxytest"
)

type proxyBundle struct {
	h     *servertest.Harness
	team  *accessproxytest.Team
	clock *persisttest.Clock
}

// setupProxy runs the API behind a stand-in Access team, on a pinned clock.
func setupProxy(t *testing.T) proxyBundle {
	t.Helper()
	team := accessproxytest.New(t)
	clock := persisttest.NewClock()
	h := servertest.New(t, servertest.WithClock(clock), servertest.WithConfig(func(c *server.Config) {
		c.IdentityProxy = team.Config(nil) // the server's clock: the store's
	}))
	return proxyBundle{h: h, team: team, clock: clock}
}

// asserted sends a request carrying an assertion (and any other headers and cookies).
func (b proxyBundle) asserted(t *testing.T, method, path, assertion string, body any, header map[string]string, cookies ...*http.Cookie) *servertest.Response {
	t.Helper()
	h := map[string]string{accessproxy.Header: assertion}
	for k, v := range header {
		h[k] = v
	}
	return b.h.Do(t, servertest.Request{Method: method, Path: path, Body: body, Header: h, Cookies: cookies})
}

// me signs in as email with a fresh assertion and returns the response of GET /api/me.
func (b proxyBundle) me(t *testing.T, email string) *servertest.Response {
	t.Helper()
	return b.asserted(t, http.MethodGet, "/api/me", b.team.Assertion(t, email, b.clock.Now()), nil, nil)
}

// sessionCookie is the session cookie a response sets; it fails the test when there is none.
func sessionCookie(t *testing.T, r *servertest.Response) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "cc_session" && c.Value != "" {
			return c
		}
	}
	t.Fatalf("no session cookie in %v", r.Header.Values("Set-Cookie"))
	return nil
}

// proxyRoles lists the workspaces of the session in cookie as id → role.
func proxyRoles(t *testing.T, h *servertest.Harness, cookie *http.Cookie) map[string]string {
	t.Helper()
	byID, _ := rolesOf(t, h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/workspaces", Cookies: []*http.Cookie{cookie}}))
	return byID
}

func TestProxySignIn(t *testing.T) {
	t.Parallel()
	t.Run("SignsInAndSetsTheCookie", func(t *testing.T) {
		t.Parallel()
		b := setupProxy(t)
		r := b.me(t, "Nia@Example.com")
		r.RequireStatus(t, http.StatusOK)
		user := r.JSON(t)["user"].(map[string]any)
		require.Equal(t, "nia@example.com", user["email"], "found or created by normalised email")
		cookie := sessionCookie(t, r)
		require.True(t, strings.HasPrefix(cookie.Value, "sst_"))
		require.True(t, cookie.HttpOnly)
		require.Equal(t, persist.MethodProxy, sessionMethod(t, b.h.Store, cookie.Value))
		again := b.me(t, "nia@EXAMPLE.com")
		require.Equal(t, user["id"], meID(t, again), "the same person again")
	})
	t.Run("FirstPersonOwnsTheDefaultWorkspaceLaterOnesAreMembers", func(t *testing.T) {
		t.Parallel()
		b := setupProxy(t)
		first := sessionCookie(t, b.me(t, "first@example.com"))
		roles := proxyRoles(t, b.h, first)
		require.Len(t, roles, 1, "the default workspace was created for the first person")
		var wsID string
		for id, role := range roles {
			wsID = id
			require.Equal(t, persist.RoleOwner, role)
		}
		second := sessionCookie(t, b.me(t, "second@example.com"))
		require.Equal(t, map[string]string{wsID: persist.RoleMember}, proxyRoles(t, b.h, second))
		// Signing in again changes no role.
		require.Equal(t, map[string]string{wsID: persist.RoleOwner}, proxyRoles(t, b.h, sessionCookie(t, b.me(t, "first@example.com"))))
		// The default workspace comes with #general.
		r := b.h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/workspaces/" + wsID + "/channels", Cookies: []*http.Cookie{second}})
		r.RequireStatus(t, http.StatusOK)
		require.Contains(t, string(r.Body), `"name":"general"`)
	})
	t.Run("ExistingDefaultWorkspaceWithAnOwner", func(t *testing.T) {
		t.Parallel()
		b := setupProxy(t)
		ctx := context.Background()
		boot, err := persist.WithTxV(ctx, b.h.Store, func(tx *persist.Tx) (persist.Bootstrap, error) { return tx.DevBootstrap(ctx) })
		require.NoError(t, err)
		cookie := sessionCookie(t, b.me(t, "late@example.com"))
		require.Equal(t, map[string]string{boot.Workspace.ID: persist.RoleMember}, proxyRoles(t, b.h, cookie))
	})
	t.Run("ConcurrentFirstArrivalsMakeOneOwner", func(t *testing.T) {
		t.Parallel()
		b := setupProxy(t)
		emails := []string{"a@example.com", "b@example.com", "c@example.com", "d@example.com"}
		responses := make(chan *servertest.Response, len(emails))
		for _, email := range emails {
			go func() { responses <- b.me(t, email) }()
		}
		owners, workspaces := 0, map[string]bool{}
		for range emails {
			for id, role := range proxyRoles(t, b.h, sessionCookie(t, <-responses)) {
				workspaces[id] = true
				if role == persist.RoleOwner {
					owners++
				}
			}
		}
		require.Len(t, workspaces, 1)
		require.Equal(t, 1, owners)
	})
	t.Run("LaterRequestsUseTheCookie", func(t *testing.T) {
		t.Parallel()
		b := setupProxy(t)
		cookie := sessionCookie(t, b.me(t, "nia@example.com"))
		fetches := b.team.Fetches()
		// A cookie wins over any assertion, which is not even checked; it outlives the assertion.
		b.clock.Advance(2 * time.Hour)
		r := b.asserted(t, http.MethodGet, "/api/me", "not-a-jwt", nil, nil, cookie)
		r.RequireStatus(t, http.StatusOK)
		require.Empty(t, r.Header.Get("Set-Cookie"))
		r = b.h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Cookies: []*http.Cookie{cookie}})
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, fetches, b.team.Fetches())
	})
	t.Run("StaleCookieGivesWayToTheAssertion", func(t *testing.T) {
		t.Parallel()
		b := setupProxy(t)
		first := b.me(t, "nia@example.com")
		cookie := sessionCookie(t, first)
		b.h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/auth/logout", Header: map[string]string{"X-Natter-CSRF": "1"},
			Cookies: []*http.Cookie{cookie}}).RequireStatus(t, http.StatusOK)
		b.h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Cookies: []*http.Cookie{cookie}}).
			RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		r := b.asserted(t, http.MethodGet, "/api/me", b.team.Assertion(t, "nia@example.com", b.clock.Now()), nil, nil, cookie)
		require.Equal(t, meID(t, first), meID(t, r))
		require.NotEqual(t, cookie.Value, sessionCookie(t, r).Value)
	})
	t.Run("BearerComesFirst", func(t *testing.T) {
		t.Parallel()
		b := setupProxy(t)
		alice := b.h.NewUser(t)
		r := b.h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Token: alice.Token,
			Header: map[string]string{accessproxy.Header: b.team.Assertion(t, "mallory@example.com", b.clock.Now())}})
		require.Equal(t, alice.User.ID, meID(t, r))
		require.Empty(t, r.Header.Get("Set-Cookie"))
		require.Zero(t, b.team.Fetches())
	})
	t.Run("ComesBeforeTheLocalHeader", func(t *testing.T) {
		t.Parallel()
		b := setupProxy(t)
		bob := b.h.NewUser(t)
		r := b.asserted(t, http.MethodGet, "/api/me", b.team.Assertion(t, "nia@example.com", b.clock.Now()), nil,
			map[string]string{"X-Natter-User": bob.User.ID})
		require.NotEqual(t, bob.User.ID, meID(t, r))
	})
}

// TestProxyRefusals: an assertion that fails any rule is 401 and creates nobody.
func TestProxyRefusals(t *testing.T) {
	t.Parallel()
	b := setupProxy(t)
	now := b.clock.Now()
	with := func(edit func(jwt.MapClaims)) string {
		c := accessproxytest.Claims("mallory@example.com", now)
		edit(c)
		return b.team.Sign(t, "k1", c)
	}
	hs256, err := jwt.NewWithClaims(jwt.SigningMethodHS256, accessproxytest.Claims("mallory@example.com", now)).SignedString([]byte("secret"))
	require.NoError(t, err)
	for name, assertion := range map[string]string{
		"OtherIssuer":   with(func(c jwt.MapClaims) { c["iss"] = "https://evil.cloudflareaccess.com" }),
		"OtherAudience": with(func(c jwt.MapClaims) { c["aud"] = []string{"another-app"} }),
		"Expired":       with(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Hour).Unix() }),
		"IssuedLater":   with(func(c jwt.MapClaims) { c["iat"] = now.Add(time.Hour).Unix() }),
		"ServiceToken":  with(func(c jwt.MapClaims) { delete(c, "email"); c["common_name"] = "svc" }),
		"NotAnEmail":    with(func(c jwt.MapClaims) { c["email"] = "mallory" }),
		"HS256":         hs256,
		"UnknownKey":    b.team.Sign(t, "k2", accessproxytest.Claims("mallory@example.com", now)),
		"Garbage":       "garbage",
	} {
		r := b.asserted(t, http.MethodGet, "/api/me", assertion, nil, nil)
		r.RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		require.Empty(t, r.Header.Get("Set-Cookie"), name)
	}
	ctx := context.Background()
	_, err = persist.WithTxV(ctx, b.h.Store, func(tx *persist.Tx) (persist.User, error) { return tx.UserGetByEmail(ctx, "mallory@example.com") })
	e, ok := persist.ErrorOf(err)
	require.True(t, ok && e.Code == persist.CodeNotFound, "nobody was created: %v", err)
	require.EqualValues(t, 1, b.team.Fetches(), "the unknown key refreshed the set once, not per request")
}

func TestProxyCSRF(t *testing.T) {
	t.Parallel()
	b := setupProxy(t)
	create := func(header map[string]string) *servertest.Response {
		return b.asserted(t, http.MethodPost, "/api/workspaces", b.team.Assertion(t, "nia@example.com", b.clock.Now()),
			map[string]string{"name": "Proxy " + persist.NewID("", b.clock.Now())[20:]}, header)
	}
	create(nil).RequireError(t, http.StatusForbidden, persist.CodeCSRF)
	require.Zero(t, b.team.Fetches(), "a refused request verifies nothing")
	ctx := context.Background()
	_, err := persist.WithTxV(ctx, b.h.Store, func(tx *persist.Tx) (persist.User, error) { return tx.UserGetByEmail(ctx, "nia@example.com") })
	e, ok := persist.ErrorOf(err)
	require.True(t, ok && e.Code == persist.CodeNotFound, "nobody was created: %v", err)
	create(map[string]string{"X-Natter-CSRF": "1", "Origin": "https://evil.example"}).RequireError(t, http.StatusForbidden, persist.CodeCSRF)
	create(map[string]string{"X-Natter-CSRF": "1", "Sec-Fetch-Site": "cross-site"}).RequireError(t, http.StatusForbidden, persist.CodeCSRF)
	create(map[string]string{"X-Natter-CSRF": "1"}).RequireStatus(t, http.StatusCreated)
	create(map[string]string{"X-ClickClack-CSRF": "1", "Origin": b.h.URL}).RequireStatus(t, http.StatusCreated)
}

func TestProxyOffIgnoresTheHeader(t *testing.T) {
	t.Parallel()
	team := accessproxytest.New(t)
	h := servertest.New(t)
	r := h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me",
		Header: map[string]string{accessproxy.Header: team.Assertion(t, "nia@example.com", time.Now())}})
	r.RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	require.Zero(t, team.Fetches())
	u := persisttest.User(t, h.Store, nil)
	r = h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/me", Header: map[string]string{
		accessproxy.Header: "garbage", "X-Natter-User": u.ID}})
	require.Equal(t, u.ID, meID(t, r), "the next way of identifying applies")
}
