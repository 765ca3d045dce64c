package server_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/server/signin"
)

// Rule 7 of §Code-hosting OAuth and §Versioning: the desktop handoff, protocols 1 and 2.

var (
	protocol1Grant = regexp.MustCompile(`^[a-f0-9]{32}$`)
	protocol2Grant = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)
)

// desktopStart opens desktop/start in the system browser with the app's verifier; protocol ""
// leaves the parameter out.
func (w *githubWorld) desktopStart(t *testing.T, b *browser, verifier, protocol string) *servertest.Response {
	t.Helper()
	q := url.Values{"code_challenge": {signin.Challenge(verifier)}}
	if protocol != "" {
		q.Set("desktop_protocol", protocol)
	}
	return b.get(t, "/api/auth/github/desktop/start?"+q.Encode())
}

// desktopSignIn runs the browser part of a desktop sign-in and returns the callback's redirect
// to the app.
func (w *githubWorld) desktopSignIn(t *testing.T, verifier, protocol string) *url.URL {
	t.Helper()
	b := newBrowser(t, w.h)
	authorize := location(t, w.desktopStart(t, b, verifier, protocol))
	r := b.get(t, callbackPath(t, authorize, w.gh.authorize(authorize, octocat())))
	require.Empty(t, b.cookie(t, "/", "cc_session"), "a desktop sign-in sets no session in the system browser")
	return location(t, r)
}

// consume is the app redeeming its grant.
func consume(t *testing.T, h *servertest.Harness, grant, verifier string) *servertest.Response {
	t.Helper()
	return h.Post(t, "/api/auth/github/desktop/consume", "", map[string]string{"code": grant, "code_verifier": verifier})
}

func TestGitHubDesktop(t *testing.T) {
	t.Parallel()

	t.Run("Protocol2", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		verifier := signin.NewSecret()
		app := w.desktopSignIn(t, verifier, "2")
		require.Equal(t, "natter", app.Scheme)
		require.Empty(t, app.Host)
		require.Equal(t, "/auth/callback", app.Path)
		grant := app.Query().Get("code")
		require.Regexp(t, protocol2Grant, grant)
		require.Equal(t, "natter:/auth/callback?code="+grant, app.String())

		r := consume(t, w.h, grant, verifier)
		r.RequireStatus(t, http.StatusOK)
		body := r.JSON(t)
		require.Equal(t, "The Octocat", body["user"].(map[string]any)["display_name"])
		token := body["token"].(string)
		require.True(t, strings.HasPrefix(token, persist.PrefixSessionToken))
		require.Contains(t, r.Header.Get("Set-Cookie"), "cc_session="+token)
		require.Contains(t, r.Header.Get("Set-Cookie"), "HttpOnly")
		w.h.Get(t, "/api/me", token).RequireStatus(t, http.StatusOK)

		consume(t, w.h, grant, verifier).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})

	t.Run("Protocol1IsTheDefaultAndUsesTheLegacyScheme", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		verifier := signin.NewSecret()
		app := w.desktopSignIn(t, verifier, "")
		require.Equal(t, "natter-legacy", app.Scheme)
		require.Equal(t, "auth", app.Host)
		require.Equal(t, "/callback", app.Path)
		grant := app.Query().Get("code")
		require.Regexp(t, protocol1Grant, grant)
		consume(t, w.h, grant, verifier).RequireStatus(t, http.StatusOK)

		app = w.desktopSignIn(t, verifier, "1")
		require.Regexp(t, protocol1Grant, app.Query().Get("code"))
	})

	t.Run("ConfiguredSchemes", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, func(_ *signin.GitHubConfig, c *server.Config) {
			c.DesktopScheme, c.LegacyDesktopScheme = "chat.example.desktop", "chat-old"
		})
		require.True(t, strings.HasPrefix(w.desktopSignIn(t, signin.NewSecret(), "2").String(), "chat.example.desktop:/auth/callback?code="))
		require.True(t, strings.HasPrefix(w.desktopSignIn(t, signin.NewSecret(), "1").String(), "chat-old://auth/callback?code="))
	})

	t.Run("NamespacedCookiesRefuseProtocol1BeforeAnyRedirect", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, func(_ *signin.GitHubConfig, c *server.Config) { c.CookieNamespace = "prod" })
		b := newBrowser(t, w.h)
		for _, protocol := range []string{"", "1"} {
			r := w.desktopStart(t, b, signin.NewSecret(), protocol)
			r.RequireError(t, http.StatusUpgradeRequired, persist.CodeUpgradeRequired)
			require.Empty(t, r.Header.Get("Location"))
			require.Empty(t, r.Header.Get("Set-Cookie"), "nothing is recorded for a refused client")
		}
		// Protocol 2 works, with namespaced cookies.
		verifier := signin.NewSecret()
		authorize := location(t, w.desktopStart(t, b, verifier, "2"))
		require.NotEmpty(t, b.cookie(t, "/api/auth/github/callback", "cc_oauth_binding_prod"))
		app := location(t, b.get(t, callbackPath(t, authorize, w.gh.authorize(authorize, octocat()))))
		r := consume(t, w.h, app.Query().Get("code"), verifier)
		r.RequireStatus(t, http.StatusOK)
		require.Contains(t, r.Header.Get("Set-Cookie"), "cc_session_prod=")
	})

	t.Run("WrongVerifierRefusedAndGrantKept", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		verifier := signin.NewSecret()
		grant := w.desktopSignIn(t, verifier, "2").Query().Get("code")
		consume(t, w.h, grant, signin.NewSecret()).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		consume(t, w.h, grant, verifier).RequireStatus(t, http.StatusOK)
	})

	t.Run("GrantExpiresAfterFiveMinutes", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		verifier := signin.NewSecret()
		late := w.desktopSignIn(t, verifier, "2").Query().Get("code")
		onTime := w.desktopSignIn(t, verifier, "1").Query().Get("code")
		w.clock.Advance(5*time.Minute - 1) // SPEC §Limits: desktop grants valid 5 minutes
		consume(t, w.h, onTime, verifier).RequireStatus(t, http.StatusOK)
		w.clock.Advance(1)
		consume(t, w.h, late, verifier).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})

	t.Run("ConsumeAcceptsExactlyTheTwoGrantFormats", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		verifier := signin.NewSecret()
		for _, code := range []string{"", "ABCDEF0123456789abcdef0123456789", strings.Repeat("a", 31), strings.Repeat("a", 33),
			strings.Repeat("a", 42), strings.Repeat("a", 44), strings.Repeat("a", 42) + "=", strings.Repeat("a", 42) + "+", "AAAA-BBBB-CCCC"} {
			r := consume(t, w.h, code, verifier)
			r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
			require.Contains(t, r.JSON(t)["error"], "desktop grant", "code %q", code)
		}
		// Well-formed but unknown grants of both formats get the same answer as used ones.
		for _, code := range []string{strings.Repeat("a", 32), strings.Repeat("a", 43)} {
			r := consume(t, w.h, code, verifier)
			r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
			require.Contains(t, r.JSON(t)["error"], "unknown, already used, expired")
		}
		consume(t, w.h, strings.Repeat("a", 43), "short").RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})

	t.Run("ConsumeIsJSONOnlyAndSameSiteOnly", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		verifier := signin.NewSecret()
		grant := w.desktopSignIn(t, verifier, "2").Query().Get("code")
		body := `{"code":"` + grant + `","code_verifier":"` + verifier + `"}`
		req := servertest.Request{Method: http.MethodPost, Path: "/api/auth/github/desktop/consume", Body: body,
			Header: map[string]string{"Content-Type": "text/plain"}}
		w.h.Do(t, req).RequireError(t, http.StatusUnsupportedMediaType, persist.CodeUnsupportedMediaType)
		req.Header = map[string]string{"Origin": "https://evil.example.com"}
		w.h.Do(t, req).RequireError(t, http.StatusForbidden, persist.CodeCrossSite)
		req.Header = map[string]string{"Sec-Fetch-Site": "cross-site"}
		w.h.Do(t, req).RequireError(t, http.StatusForbidden, persist.CodeCrossSite)
		// None of those spent the grant.
		req.Header = nil
		w.h.Do(t, req).RequireStatus(t, http.StatusOK)
	})

	t.Run("StartValidatesChallengeAndProtocol", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		b := newBrowser(t, w.h)
		for _, query := range []string{"", "code_challenge=" + strings.Repeat("a", 42), "code_challenge=" + strings.Repeat("a", 44),
			"code_challenge=" + strings.Repeat("a", 42) + "=", "code_challenge=" + signin.Challenge("v") + "&desktop_protocol=3",
			"code_challenge=" + signin.Challenge("v") + "&desktop_protocol=two"} {
			b.get(t, "/api/auth/github/desktop/start?"+query).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
	})

	t.Run("GrantCapacity", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, 4096, persist.DefaultOAuthLimits.DesktopGrants)
		w := newGitHubWorld(t, func(_ *signin.GitHubConfig, c *server.Config) {
			c.OAuthLimits = persist.OAuthLimits{DesktopGrants: 1}
		})
		verifier := signin.NewSecret()
		grant := w.desktopSignIn(t, verifier, "2").Query().Get("code")
		b := newBrowser(t, w.h)
		authorize := location(t, w.desktopStart(t, b, verifier, "2"))
		callback := callbackPath(t, authorize, w.gh.authorize(authorize, octocat()))
		b.get(t, callback).RequireError(t, http.StatusServiceUnavailable, persist.CodeOverCapacity)
		consume(t, w.h, grant, verifier).RequireStatus(t, http.StatusOK)
		w.desktopSignIn(t, verifier, "2")
	})
}
