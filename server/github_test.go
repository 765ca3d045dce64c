package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/server/signin"
)

// githubWorld is a running API with GitHub sign-in pointed at a fake GitHub, on a pinned clock.
type githubWorld struct {
	h     *servertest.Harness
	gh    *fakeGitHub
	clock *persisttest.Clock
}

// newGitHubWorld starts the world; edit adjusts the GitHub and server configuration.
func newGitHubWorld(t *testing.T, edit func(*signin.GitHubConfig, *server.Config)) *githubWorld {
	t.Helper()
	// The clock starts at the real time: the browser's cookie jar expires cookies by it.
	w := &githubWorld{gh: newFakeGitHub(t), clock: persisttest.NewClockAt(time.Now().UTC().Truncate(time.Second))}
	w.h = servertest.New(t, servertest.WithClock(w.clock),
		servertest.WithConfig(func(c *server.Config) {
			gc := w.gh.config()
			if edit != nil {
				edit(&gc, c)
			}
			gh, err := signin.NewGitHub(gc)
			require.NoError(t, err)
			c.GitHub = gh
		}))
	return w
}

// start begins a browser sign-in and returns the GitHub authorization URL it redirects to.
func (w *githubWorld) start(t *testing.T, b *browser) *servertest.Response {
	t.Helper()
	return b.get(t, "/api/auth/github/start")
}

// pending starts a sign-in in b that GitHub approves for a, and returns the callback GitHub
// sends the browser to.
func (w *githubWorld) pending(t *testing.T, b *browser, a fakeAccount) string {
	t.Helper()
	authorize := location(t, w.start(t, b))
	return callbackPath(t, authorize, w.gh.authorize(authorize, a))
}

// signIn runs the whole browser flow for account and returns the callback's response.
func (w *githubWorld) signIn(t *testing.T, b *browser, a fakeAccount) *servertest.Response {
	t.Helper()
	return b.get(t, w.pending(t, b, a))
}

// signedIn runs the flow, requires success, and returns the signed-in user.
func (w *githubWorld) signedIn(t *testing.T, a fakeAccount) (*browser, map[string]any) {
	t.Helper()
	b := newBrowser(t, w.h)
	r := w.signIn(t, b, a)
	require.Equal(t, "/", location(t, r).String())
	return b, b.me(t)
}

func octocat() fakeAccount {
	return fakeAccount{ID: 583231, Login: "octocat", Name: "The Octocat", Email: "octocat@example.com",
		AvatarURL: "https://avatars.example.com/u/583231"}
}

func TestGitHubSignIn(t *testing.T) {
	t.Parallel()

	t.Run("StartRecordsTransactionAndRedirects", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		b := newBrowser(t, w.h)
		r := w.start(t, b)
		authorize := location(t, r)
		require.Equal(t, w.gh.srv.URL+"/login/oauth/authorize", authorize.Scheme+"://"+authorize.Host+authorize.Path)
		q := authorize.Query()
		require.Equal(t, w.h.URL+"/api/auth/github/callback", q.Get("redirect_uri"), "loopback development derives the callback from the request host")
		require.Equal(t, "read:user user:email", q.Get("scope"), "open login without a moderator org does not ask for read:org")
		require.Len(t, q.Get("code_challenge"), 43)
		require.Equal(t, "S256", q.Get("code_challenge_method"))
		require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
		var binding *http.Cookie
		for _, c := range (&http.Response{Header: r.Header}).Cookies() {
			if c.Name == "cc_oauth_binding" {
				binding = c
			}
		}
		require.NotNil(t, binding, "start sets the browser-binding cookie")
		require.True(t, binding.HttpOnly)
		require.Equal(t, "/api/auth/", binding.Path)
		require.Equal(t, 600, binding.MaxAge, "SPEC §Limits: OAuth transaction valid 10 minutes")
		require.NotContains(t, r.Header.Get("Location"), binding.Value, "the binding never leaves for the provider")
	})

	t.Run("CallbackCreatesSessionAndRedirectsHome", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		b, me := w.signedIn(t, octocat())
		require.Equal(t, "The Octocat", me["display_name"])
		require.Equal(t, "octocat@example.com", me["email"])
		require.Equal(t, "https://avatars.example.com/u/583231", me["avatar_url"])
		token := b.cookie(t, "/", "cc_session")
		require.True(t, strings.HasPrefix(token, persist.PrefixSessionToken), "the session cookie is set")
		// The session is a GitHub session.
		ctx := context.Background()
		sess, err := persist.WithTxV(ctx, w.h.Store, func(tx *persist.Tx) (persist.Session, error) {
			s, _, err := tx.SessionResolve(ctx, token)
			return s, err
		})
		require.NoError(t, err)
		require.Equal(t, persist.MethodGitHub, sess.Method)
	})

	t.Run("AnotherReplicaFinishesTheSignIn", func(t *testing.T) {
		t.Parallel()
		// The transaction lives in the database: a second server over the same store (another
		// replica, or this one restarted) finishes what the first started.
		w := newGitHubWorld(t, nil)
		b := newBrowser(t, w.h)
		callback := w.pending(t, b, octocat())
		gh, err := signin.NewGitHub(w.gh.config())
		require.NoError(t, err)
		replica, err := server.New(server.Config{Store: w.h.Store, GitHub: gh})
		require.NoError(t, err)
		ts := httptest.NewServer(replica.Handler())
		t.Cleanup(ts.Close)
		b.base = ts.URL // the cookie jar keys cookies by host, not port: the browser keeps its binding
		require.Equal(t, "/", location(t, b.get(t, callback)).String())
		require.Equal(t, "The Octocat", b.me(t)["display_name"])
	})

	t.Run("NonLocalRequestNeedsPublicURL", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		r := newBrowser(t, w.h).do(t, http.MethodGet, "/api/auth/github/start", nil, map[string]string{"Host": "chat.example.com"})
		r.RequireError(t, http.StatusServiceUnavailable, persist.CodeUnavailable)
	})

	t.Run("PublicURLIsTheCallbackOrigin", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, func(_ *signin.GitHubConfig, c *server.Config) { c.PublicURL = "https://chat.example.com" })
		r := newBrowser(t, w.h).do(t, http.MethodGet, "/api/auth/github/start", nil, map[string]string{"Host": "evil.example.net"})
		require.Equal(t, "https://chat.example.com/api/auth/github/callback", location(t, r).Query().Get("redirect_uri"))
	})

	t.Run("BindingMismatchRefusedAndLeavesTheTransaction", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		victim, attacker := newBrowser(t, w.h), newBrowser(t, w.h)
		callback := w.pending(t, victim, octocat())
		w.start(t, attacker) // the attacker holds a binding of their own
		attacker.get(t, callback).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		newBrowser(t, w.h).get(t, callback).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		require.Zero(t, w.gh.exchanges.Load(), "no code is exchanged for a foreign browser")
		// The state was not spent: the browser that started the sign-in finishes it.
		require.Equal(t, "/", location(t, victim.get(t, callback)).String())
		require.Equal(t, "The Octocat", victim.me(t)["display_name"])
	})

	t.Run("ReplayedStateRefused", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		b := newBrowser(t, w.h)
		callback := w.pending(t, b, octocat())
		require.Equal(t, "/", location(t, b.get(t, callback)).String())
		b.get(t, callback).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		require.EqualValues(t, 1, w.gh.exchanges.Load())
	})

	t.Run("ExpiredTransactionRefused", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		b := newBrowser(t, w.h)
		callback := w.pending(t, b, octocat())
		w.clock.Advance(10 * time.Minute)
		b.get(t, callback).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})

	t.Run("TransactionValidJustUnderTenMinutes", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		b := newBrowser(t, w.h)
		callback := w.pending(t, b, octocat())
		w.clock.Advance(10*time.Minute - time.Second)
		require.Equal(t, "/", location(t, b.get(t, callback)).String())
	})

	t.Run("CallbackWithoutStateOrWithProviderErrorRefused", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		b := newBrowser(t, w.h)
		w.start(t, b)
		b.get(t, "/api/auth/github/callback?code=abc").RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		b.get(t, "/api/auth/github/callback?error=access_denied&state=x").RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})

	t.Run("ExchangeUsesStoredVerifierAndRedirectURI", func(t *testing.T) {
		t.Parallel()
		// The fake refuses a verifier or redirect URI that differs from the authorization's, so a
		// successful sign-in proves both; a code GitHub refuses is a provider failure.
		w := newGitHubWorld(t, nil)
		b := newBrowser(t, w.h)
		authorize := location(t, w.start(t, b))
		b.get(t, callbackPath(t, authorize, "a-code-github-never-issued")).RequireError(t, http.StatusBadGateway, persist.CodeProviderFailed)
	})

	t.Run("AmbiguousBindingCookiesRefused", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		r := w.h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/auth/github/start", Cookies: []*http.Cookie{
			{Name: "cc_oauth_binding", Value: signin.NewSecret()}, {Name: "cc_oauth_binding", Value: signin.NewSecret()}}})
		r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})
}

func TestGitHubCapacity(t *testing.T) {
	t.Parallel()

	t.Run("EightPendingStartsPerBrowser", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		b := newBrowser(t, w.h)
		var first string
		for i := range persist.DefaultOAuthLimits.PerBinding {
			callback := w.pending(t, b, octocat())
			if i == 0 {
				first = callback
			}
		}
		require.Equal(t, 8, persist.DefaultOAuthLimits.PerBinding)
		r := w.start(t, b)
		r.RequireError(t, http.StatusServiceUnavailable, persist.CodeOverCapacity)
		require.Equal(t, "600", r.Header.Get("Retry-After"), "the oldest pending start expires in 10 minutes")
		// Another browser is not affected.
		location(t, w.start(t, newBrowser(t, w.h)))
		// Finishing one frees a place.
		require.Equal(t, "/", location(t, b.get(t, first)).String())
		location(t, w.start(t, b))
		// Expired transactions free theirs too.
		w.start(t, b).RequireError(t, http.StatusServiceUnavailable, persist.CodeOverCapacity)
		w.clock.Advance(10 * time.Minute)
		location(t, w.start(t, b))
	})

	t.Run("InstanceLimit", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, 8192, persist.DefaultOAuthLimits.Transactions)
		w := newGitHubWorld(t, func(_ *signin.GitHubConfig, c *server.Config) {
			c.OAuthLimits = persist.OAuthLimits{Transactions: 3}
		})
		for range 3 {
			location(t, w.start(t, newBrowser(t, w.h)))
		}
		w.clock.Advance(time.Minute)
		r := w.start(t, newBrowser(t, w.h))
		r.RequireError(t, http.StatusServiceUnavailable, persist.CodeOverCapacity)
		require.Equal(t, "540", r.Header.Get("Retry-After"))
		w.clock.Advance(9 * time.Minute)
		location(t, w.start(t, newBrowser(t, w.h)))
	})

	// An attacker sends no binding cookie, so every start of theirs is a new browser: the
	// pending starts of one client address are bounded too, and the rest of the world can still
	// sign in. The address is the peer's; a forwarding header changes nothing.
	t.Run("SixtyFourPendingStartsPerAddress", func(t *testing.T) {
		t.Parallel()
		w := newGitHubWorld(t, nil)
		anonymous := func(from string, header map[string]string) *servertest.Response {
			return w.h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/api/auth/github/start", From: from, Header: header})
		}
		const attacker = "127.0.0.2"
		for range 64 {
			anonymous(attacker, nil).RequireStatus(t, http.StatusFound)
		}
		r := anonymous(attacker, nil)
		r.RequireError(t, http.StatusServiceUnavailable, persist.CodeOverCapacity)
		require.Equal(t, "600", r.Header.Get("Retry-After"))
		anonymous(attacker, map[string]string{"X-Forwarded-For": "198.51.100.7", "X-Real-IP": "198.51.100.7"}).
			RequireError(t, http.StatusServiceUnavailable, persist.CodeOverCapacity)
		// Everyone else signs in as usual.
		b := newBrowser(t, w.h)
		require.Equal(t, "/", location(t, w.signIn(t, b, octocat())).String())
		anonymous("127.0.0.3", nil).RequireStatus(t, http.StatusFound)
		// The attacker's starts expire like any others.
		w.clock.Advance(10 * time.Minute)
		anonymous(attacker, nil).RequireStatus(t, http.StatusFound)
	})
}

func TestOAuthStartsWithoutCredentials(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	for _, path := range []string{"/api/auth/github/start", "/api/auth/github/desktop/start?code_challenge=" + signin.Challenge("v") +
		"&desktop_protocol=2", "/api/auth/github/callback?code=a&state=b", "/api/auth/oidc/start", "/api/auth/oidc/callback?code=a&state=b"} {
		h.Get(t, path, "").RequireError(t, http.StatusNotImplemented, persist.CodeNotImplemented)
	}
	require.Empty(t, h.Server.AuthMethods())
}
