package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/server/signin"
)

// §OIDC sign-in, through the real router against a fake provider discovered at start-up.

// oidcPublicURL is the deployment's public origin in these tests; the fake provider only echoes
// the callback URL, and the test browser calls the callback on the test server itself.
const oidcPublicURL = "http://127.0.0.1"

type oidcWorld struct {
	h     *servertest.Harness
	idp   *fakeOIDC
	clock *persisttest.Clock
}

func newOIDCWorld(t *testing.T, edit func(*server.Config)) *oidcWorld {
	t.Helper()
	w := &oidcWorld{idp: newFakeOIDC(t), clock: persisttest.NewClockAt(time.Now().UTC().Truncate(time.Second))}
	provider, err := signin.DiscoverOIDC(t.Context(), w.idp.config())
	require.NoError(t, err)
	w.h = servertest.New(t, servertest.WithClock(w.clock), servertest.WithConfig(func(c *server.Config) {
		c.OIDC, c.PublicURL = provider, oidcPublicURL
		if edit != nil {
			edit(c)
		}
	}))
	return w
}

// signIn runs the browser flow with the claims the provider puts in the id_token.
func (w *oidcWorld) signIn(t *testing.T, b *browser, claims map[string]any) *servertest.Response {
	t.Helper()
	authorize := location(t, b.get(t, "/api/auth/oidc/start"))
	return b.get(t, callbackPath(t, authorize, w.idp.authorize(authorize, claims)))
}

func (w *oidcWorld) signedIn(t *testing.T, claims map[string]any) (*browser, map[string]any) {
	t.Helper()
	b := newBrowser(t, w.h)
	require.Equal(t, "/", location(t, w.signIn(t, b, claims)).String())
	return b, b.me(t)
}

func TestOIDCSignIn(t *testing.T) {
	t.Parallel()

	t.Run("StartRedirectsToDiscoveredEndpoint", func(t *testing.T) {
		t.Parallel()
		w := newOIDCWorld(t, nil)
		b := newBrowser(t, w.h)
		authorize := location(t, b.get(t, "/api/auth/oidc/start"))
		require.Equal(t, w.idp.issuer+"/authorize", authorize.Scheme+"://"+authorize.Host+authorize.Path)
		q := authorize.Query()
		require.Equal(t, "openid profile email", q.Get("scope"))
		require.Equal(t, oidcPublicURL+"/api/auth/oidc/callback", q.Get("redirect_uri"))
		require.Equal(t, "S256", q.Get("code_challenge_method"))
		require.NotEmpty(t, b.cookie(t, "/api/auth/oidc/callback", "cc_oauth_binding"), "the same binding cookie as GitHub")
		require.Equal(t, []string{persist.ProviderOIDC}, w.h.Server.AuthMethods())
	})

	t.Run("CallbackSignsInByLowercasedEmailAndJoinsDefaultWorkspace", func(t *testing.T) {
		t.Parallel()
		w := newOIDCWorld(t, nil)
		b, me := w.signedIn(t, w.idp.claims("Olivia@Example.COM", w.clock.Now()))
		require.Equal(t, "olivia@example.com", me["email"])
		require.Equal(t, "Olivia Idp", me["display_name"])
		roles := workspaceRoles(t, b)
		require.Len(t, roles, 1, "a server without a default workspace gets one")
		var slug string
		for s, role := range roles {
			slug = s
			require.Equal(t, persist.RoleOwner, role)
		}
		ctx := t.Context()
		sess, err := persist.WithTxV(ctx, w.h.Store, func(tx *persist.Tx) (persist.Session, error) {
			s, _, err := tx.SessionResolve(ctx, b.cookie(t, "/", "cc_session"))
			return s, err
		})
		require.NoError(t, err)
		require.Equal(t, persist.MethodOIDC, sess.Method)

		b2, _ := w.signedIn(t, w.idp.claims("second@example.com", w.clock.Now()))
		require.Equal(t, map[string]string{slug: persist.RoleMember}, workspaceRoles(t, b2))
	})

	t.Run("LinksExistingUserByEmail", func(t *testing.T) {
		t.Parallel()
		w := newOIDCWorld(t, nil)
		existing := persisttest.User(t, w.h.Store, &persisttest.UserOpts{Email: persisttest.Ptr("olivia@example.com"),
			DisplayName: persisttest.Ptr("Olivia Local")})
		_, me := w.signedIn(t, w.idp.claims("OLIVIA@example.com", w.clock.Now()))
		require.Equal(t, existing.ID, me["id"])
		require.Equal(t, "Olivia Local", me["display_name"])
	})

	t.Run("VerifiedEmailRequired", func(t *testing.T) {
		t.Parallel()
		w := newOIDCWorld(t, nil)
		for name, edit := range map[string]func(map[string]any){
			"Unverified":     func(c map[string]any) { c["email_verified"] = false },
			"NoVerification": func(c map[string]any) { delete(c, "email_verified") },
			"StringFalse":    func(c map[string]any) { c["email_verified"] = "false" },
			"NoEmail":        func(c map[string]any) { delete(c, "email") },
		} {
			claims := w.idp.claims("nobody@example.com", w.clock.Now())
			edit(claims)
			r := w.signIn(t, newBrowser(t, w.h), claims)
			require.Equal(t, http.StatusForbidden, r.Status, "%s: %s", name, r.Body)
			r.RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		}
		ctx := t.Context()
		_, err := persist.WithTxV(ctx, w.h.Store, func(tx *persist.Tx) (persist.User, error) {
			return tx.UserGetByEmail(ctx, "nobody@example.com")
		})
		require.Error(t, err, "no user is created without a verified email")

		claims := w.idp.claims("stringy@example.com", w.clock.Now())
		claims["email_verified"] = "true"
		_, me := w.signedIn(t, claims)
		require.Equal(t, "stringy@example.com", me["email"])
	})

	t.Run("IssuerAudienceAndExpiryEnforced", func(t *testing.T) {
		t.Parallel()
		w := newOIDCWorld(t, nil)
		for name, edit := range map[string]func(map[string]any){
			"OtherIssuer":   func(c map[string]any) { c["iss"] = "https://idp.example.com" },
			"OtherAudience": func(c map[string]any) { c["aud"] = "someone-else" },
			"AudienceList":  func(c map[string]any) { c["aud"] = []string{"someone-else", "another"} },
			"Expired":       func(c map[string]any) { c["exp"] = w.clock.Now().Unix() },
			"NoExpiry":      func(c map[string]any) { delete(c, "exp") },
		} {
			claims := w.idp.claims("claims@example.com", w.clock.Now())
			edit(claims)
			r := w.signIn(t, newBrowser(t, w.h), claims)
			require.Equal(t, http.StatusBadGateway, r.Status, "%s: %s", name, r.Body)
			r.RequireError(t, http.StatusBadGateway, persist.CodeProviderFailed)
		}
		claims := w.idp.claims("claims@example.com", w.clock.Now())
		claims["aud"] = []string{"someone-else", fakeClientID}
		w.signedIn(t, claims)
	})

	t.Run("ExpiryJudgedByTheServerClock", func(t *testing.T) {
		t.Parallel()
		w := newOIDCWorld(t, nil)
		b := newBrowser(t, w.h)
		claims := w.idp.claims("late@example.com", w.clock.Now())
		authorize := location(t, b.get(t, "/api/auth/oidc/start"))
		callback := callbackPath(t, authorize, w.idp.authorize(authorize, claims))
		w.clock.Advance(5 * time.Minute)
		b.get(t, callback).RequireError(t, http.StatusBadGateway, persist.CodeProviderFailed)
	})

	t.Run("StateIsSingleUseAndBoundToTheBrowser", func(t *testing.T) {
		t.Parallel()
		w := newOIDCWorld(t, nil)
		b := newBrowser(t, w.h)
		authorize := location(t, b.get(t, "/api/auth/oidc/start"))
		callback := callbackPath(t, authorize, w.idp.authorize(authorize, w.idp.claims("once@example.com", w.clock.Now())))
		newBrowser(t, w.h).get(t, callback).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		require.Equal(t, "/", location(t, b.get(t, callback)).String())
		b.get(t, callback).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})

	t.Run("NeedsPublicURL", func(t *testing.T) {
		t.Parallel()
		w := newOIDCWorld(t, func(c *server.Config) { c.PublicURL = "" })
		w.h.Get(t, "/api/auth/oidc/start", "").RequireError(t, http.StatusNotImplemented, persist.CodeNotImplemented)
		w.h.Get(t, "/api/auth/oidc/callback?code=a&state=b", "").RequireError(t, http.StatusNotImplemented, persist.CodeNotImplemented)
		require.Empty(t, w.h.Server.AuthMethods(), "an unusable provider is not advertised")
	})

	t.Run("ProvidersDoNotShareStates", func(t *testing.T) {
		t.Parallel()
		gh := newFakeGitHub(t)
		w := newOIDCWorld(t, func(c *server.Config) {
			g, err := signin.NewGitHub(gh.config())
			require.NoError(t, err)
			c.GitHub = g
		})
		require.Equal(t, []string{persist.ProviderGitHub, persist.ProviderOIDC}, w.h.Server.AuthMethods())
		b := newBrowser(t, w.h)
		authorize := location(t, b.get(t, "/api/auth/github/start"))
		github := callbackPath(t, authorize, gh.authorize(authorize, octocat()))
		b.get(t, "/api/auth/oidc/callback?"+github[len("/api/auth/github/callback?"):]).
			RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		require.Equal(t, "/", location(t, b.get(t, github)).String())
	})
}
