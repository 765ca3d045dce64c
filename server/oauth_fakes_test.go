package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/server/signin"
)

// Fakes for the OAuth tests: a GitHub and an OIDC provider on httptest servers, a browser with
// a cookie jar, and a clock tests move by hand.

// allowLoopback lets the sign-in client reach the fakes on 127.0.0.1; the default policy
// refuses them (see signin's client tests).
func allowLoopback(a netip.Addr) bool { return a.Unmap().IsLoopback() }

// browser is a user agent with a cookie jar that does not follow redirects.
type browser struct {
	base   string
	jar    *cookiejar.Jar
	client *http.Client
}

func newBrowser(t *testing.T, h *servertest.Harness) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{base: h.URL, jar: jar, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request; body, when not nil, is sent as JSON.
func (b *browser) do(t *testing.T, method, path string, body any, header map[string]string) *servertest.Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.base+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return &servertest.Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

func (b *browser) get(t *testing.T, path string) *servertest.Response {
	t.Helper()
	return b.do(t, http.MethodGet, path, nil, nil)
}

// cookie returns the value the jar would send to path, "" when none.
func (b *browser) cookie(t *testing.T, path, name string) string {
	t.Helper()
	u, err := url.Parse(b.base + path)
	require.NoError(t, err)
	for _, c := range b.jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// me reads GET /api/me with the browser's cookie.
func (b *browser) me(t *testing.T) map[string]any {
	t.Helper()
	r := b.get(t, "/api/me")
	r.RequireStatus(t, http.StatusOK)
	return r.JSON(t)["user"].(map[string]any)
}

// location parses a redirect's Location.
func location(t *testing.T, r *servertest.Response) *url.URL {
	t.Helper()
	require.Equal(t, http.StatusFound, r.Status, "%s", r.Body)
	u, err := url.Parse(r.Header.Get("Location"))
	require.NoError(t, err)
	return u
}

// callbackPath is the callback a provider would send the browser to for an authorization.
func callbackPath(t *testing.T, authorize *url.URL, code string) string {
	t.Helper()
	redirect, err := url.Parse(authorize.Query().Get("redirect_uri"))
	require.NoError(t, err)
	return redirect.Path + "?" + url.Values{"code": {code}, "state": {authorize.Query().Get("state")}}.Encode()
}

// fakeAccount is a GitHub account as the fake serves it.
type fakeAccount struct {
	ID        int64
	Login     string
	Name      string
	AvatarURL string
	Email     string // primary; verified unless Unverified
	// Unverified marks the primary email unverified.
	Unverified bool
	// Orgs maps an org to the membership state ("active", "pending").
	Orgs map[string]string
}

type fakeAuthorization struct {
	account     fakeAccount
	challenge   string
	redirectURI string
}

// fakeGitHub serves GitHub's token endpoint and the API calls sign-in makes.
type fakeGitHub struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	codes  map[string]fakeAuthorization
	tokens map[string]fakeAccount
	// exchanges counts token requests.
	exchanges atomic.Int32
}

const (
	fakeClientID     = "client-123"
	fakeClientSecret = "secret-456"
)

func newFakeGitHub(t *testing.T) *fakeGitHub {
	f := &fakeGitHub{t: t, codes: map[string]fakeAuthorization{}, tokens: map[string]fakeAccount{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login/oauth/access_token", f.token)
	mux.HandleFunc("GET /user", f.withAccount(func(w http.ResponseWriter, r *http.Request, a fakeAccount) {
		writeFakeJSON(w, map[string]any{"id": a.ID, "login": a.Login, "name": a.Name, "avatar_url": a.AvatarURL})
	}))
	mux.HandleFunc("GET /user/emails", f.withAccount(func(w http.ResponseWriter, r *http.Request, a fakeAccount) {
		emails := []map[string]any{{"email": "noreply-" + a.Login + "@users.example.com", "primary": false, "verified": true}}
		if a.Email != "" {
			emails = append(emails, map[string]any{"email": a.Email, "primary": true, "verified": !a.Unverified})
		}
		writeFakeJSON(w, emails)
	}))
	mux.HandleFunc("GET /user/memberships/orgs/{org}", f.withAccount(func(w http.ResponseWriter, r *http.Request, a fakeAccount) {
		state, ok := a.Orgs[r.PathValue("org")]
		if !ok {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		writeFakeJSON(w, map[string]any{"state": state, "role": "member"})
	}))
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// config is the GitHub configuration pointing at the fake.
func (f *fakeGitHub) config() signin.GitHubConfig {
	return signin.GitHubConfig{ClientID: fakeClientID, ClientSecret: fakeClientSecret,
		AuthorizeURL: f.srv.URL + "/login/oauth/authorize", TokenURL: f.srv.URL + "/login/oauth/access_token",
		APIURL: f.srv.URL, Policy: allowLoopback}
}

// authorize is the person approving at GitHub: it checks the authorization URL and returns the
// code GitHub would send back.
func (f *fakeGitHub) authorize(authorize *url.URL, a fakeAccount) string {
	q := authorize.Query()
	require.Equal(f.t, fakeClientID, q.Get("client_id"))
	require.Equal(f.t, "S256", q.Get("code_challenge_method"))
	require.True(f.t, signin.ValidChallenge(q.Get("code_challenge")), "challenge %q", q.Get("code_challenge"))
	require.NotEmpty(f.t, q.Get("state"))
	code := signin.NewSecret()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.codes[code] = fakeAuthorization{account: a, challenge: q.Get("code_challenge"), redirectURI: q.Get("redirect_uri")}
	return code
}

// token exchanges a code: right client, unused code, the verifier of its challenge and the exact
// redirect URI, as GitHub requires; failures answer 200 with an error field, as GitHub does.
func (f *fakeGitHub) token(w http.ResponseWriter, r *http.Request) {
	f.exchanges.Add(1)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	auth, ok := f.codes[r.PostForm.Get("code")]
	delete(f.codes, r.PostForm.Get("code"))
	f.mu.Unlock()
	switch {
	case r.PostForm.Get("client_id") != fakeClientID || r.PostForm.Get("client_secret") != fakeClientSecret:
		writeFakeJSON(w, map[string]string{"error": "incorrect_client_credentials"})
	case !ok || signin.Challenge(r.PostForm.Get("code_verifier")) != auth.challenge:
		writeFakeJSON(w, map[string]string{"error": "bad_verification_code"})
	case r.PostForm.Get("redirect_uri") != auth.redirectURI:
		writeFakeJSON(w, map[string]string{"error": "redirect_uri_mismatch"})
	default:
		token := "gho_" + signin.NewSecret()
		f.mu.Lock()
		f.tokens[token] = auth.account
		f.mu.Unlock()
		writeFakeJSON(w, map[string]string{"access_token": token, "token_type": "bearer"})
	}
}

func (f *fakeGitHub) withAccount(h func(http.ResponseWriter, *http.Request, fakeAccount)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		a, ok := f.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		f.mu.Unlock()
		if !ok {
			http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
			return
		}
		h(w, r, a)
	}
}

func writeFakeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// fakeOIDC is an OpenID Connect provider: discovery, and a token endpoint that checks
// client_secret_basic and PKCE and returns an id_token with the claims a test sets.
type fakeOIDC struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	codes  map[string]fakeOIDCAuthorization
	issuer string
}

type fakeOIDCAuthorization struct {
	claims      map[string]any
	challenge   string
	redirectURI string
}

func newFakeOIDC(t *testing.T) *fakeOIDC {
	f := &fakeOIDC{t: t, codes: map[string]fakeOIDCAuthorization{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeFakeJSON(w, map[string]string{"issuer": f.issuer, "authorization_endpoint": f.issuer + "/authorize",
			"token_endpoint": f.issuer + "/token"})
	})
	mux.HandleFunc("POST /token", f.token)
	f.srv = httptest.NewServer(mux)
	f.issuer = f.srv.URL
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOIDC) config() signin.OIDCConfig {
	return signin.OIDCConfig{Issuer: f.issuer, ClientID: fakeClientID, ClientSecret: fakeClientSecret, Policy: allowLoopback}
}

// claims are valid id_token claims for email at instant now; tests change them.
func (f *fakeOIDC) claims(email string, now time.Time) map[string]any {
	return map[string]any{"iss": f.issuer, "aud": fakeClientID, "sub": "sub-" + email, "exp": now.Add(5 * time.Minute).Unix(),
		"iat": now.Unix(), "email": email, "email_verified": true, "name": "Olivia Idp"}
}

func (f *fakeOIDC) authorize(authorize *url.URL, claims map[string]any) string {
	q := authorize.Query()
	require.Equal(f.t, "code", q.Get("response_type"))
	require.Equal(f.t, fakeClientID, q.Get("client_id"))
	require.Equal(f.t, "S256", q.Get("code_challenge_method"))
	code := signin.NewSecret()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.codes[code] = fakeOIDCAuthorization{claims: claims, challenge: q.Get("code_challenge"), redirectURI: q.Get("redirect_uri")}
	return code
}

func (f *fakeOIDC) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok || id != fakeClientID || secret != fakeClientSecret || r.ParseForm() != nil || r.PostForm.Get("client_secret") != "" {
		http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	auth, found := f.codes[r.PostForm.Get("code")]
	delete(f.codes, r.PostForm.Get("code"))
	f.mu.Unlock()
	if !found || r.PostForm.Get("grant_type") != "authorization_code" || signin.Challenge(r.PostForm.Get("code_verifier")) != auth.challenge ||
		r.PostForm.Get("redirect_uri") != auth.redirectURI {
		http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
		return
	}
	payload, _ := json.Marshal(auth.claims)
	enc := base64.RawURLEncoding
	idToken := enc.EncodeToString([]byte(`{"alg":"RS256","kid":"fake"}`)) + "." + enc.EncodeToString(payload) + "." + enc.EncodeToString([]byte("not-a-signature"))
	writeFakeJSON(w, map[string]string{"id_token": idToken, "access_token": "at", "token_type": "Bearer"})
}
