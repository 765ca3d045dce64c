package server

import (
	"net/http"
	"strings"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/signin"
)

// The OAuth machinery GitHub and OIDC share (§Code-hosting OAuth rules 1, 2, 4 and 6; §OIDC
// sign-in rule 3): the browser-binding cookie, database-backed transactions, the callback URL,
// and the redirects out. The provider protocols live in server/signin.

// oauthBindingCookie names the HTTP-only cookie that binds a sign-in to the browser that
// started it; namespaced like the session cookie.
const oauthBindingCookie = "cc_oauth_binding"

// oauthBindingPath scopes the binding cookie to the sign-in routes.
const oauthBindingPath = "/api/auth/"

func (s *Server) bindingCookieName() string {
	if s.cfg.CookieNamespace != "" {
		return oauthBindingCookie + "_" + s.cfg.CookieNamespace
	}
	return oauthBindingCookie
}

// oauthBinding returns the browser binding the request carries: "" when it carries none (or a
// malformed one). Codes: invalid_request (more than one binding cookie).
func (s *Server) oauthBinding(r *http.Request) (string, error) {
	var value string
	n := 0
	for _, c := range r.Cookies() {
		if c.Name == s.bindingCookieName() {
			value = c.Value
			n++
		}
	}
	if n > 1 {
		return "", persist.Invalid("the request carries more than one %s cookie; clear cookies for this site and sign in again", s.bindingCookieName())
	}
	if !signin.ValidSecret(value) {
		return "", nil
	}
	return value, nil
}

// oauthRedirectURI is the exact callback URL sent to the provider: the configured public origin
// plus path. Without --public-url only a loopback development request may derive it from its
// own host. Codes: unavailable (no canonical callback origin).
func (s *Server) oauthRedirectURI(r *http.Request, path string) (string, error) {
	if s.publicOrigin != "" {
		return s.publicOrigin + path, nil
	}
	if isLocalRequest(r) {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		return scheme + "://" + strings.ToLower(r.Host) + path, nil
	}
	return "", persist.Errorf(persist.CodeUnavailable, "sign-in needs --public-url: the callback address is derived from the request only for loopback development")
}

// oauthStart is a start request, ready to be recorded and sent to its provider.
type oauthStart struct {
	provider         string
	redirectURI      string
	desktopChallenge string
	desktopProtocol  int
	// authorize builds the provider's authorization URL from the state and S256 challenge.
	authorize func(state, challenge, redirectURI string) string
}

// startOAuth records a transaction (state and binding hashed, PKCE verifier, exact redirect
// URI, desktop handoff), sets or renews the binding cookie, and redirects to the provider.
// Codes: invalid_request (ambiguous binding cookies), over_capacity.
func (s *Server) startOAuth(w http.ResponseWriter, r *http.Request, st oauthStart) {
	binding, err := s.oauthBinding(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if binding == "" {
		binding = signin.NewSecret()
	}
	state, verifier := signin.NewSecret(), signin.NewSecret()
	ctx := r.Context()
	err = s.store.WithTx(ctx, func(tx *persist.Tx) error {
		return tx.OAuthTransactionStart(ctx, persist.OAuthStart{Provider: st.provider, State: state, Binding: binding,
			Client: clientAddress(r), Verifier: verifier, RedirectURI: st.redirectURI, DesktopChallenge: st.desktopChallenge,
			DesktopProtocol: st.desktopProtocol}, s.cfg.OAuthLimits)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: s.bindingCookieName(), Value: binding, Path: oauthBindingPath,
		MaxAge: int(persist.OAuthTransactionLifetime.Seconds()), HttpOnly: true, Secure: s.secureCookies(r),
		SameSite: http.SameSiteLaxMode})
	redirect(w, st.authorize(state, signin.Challenge(verifier), st.redirectURI))
}

// consumeOAuth spends the transaction a callback names, only from the browser that started
// it, and returns it with the provider's code. Codes: invalid_request (the provider refused,
// a missing code or state, no binding cookie, or an unknown, used, expired or foreign state).
func (s *Server) consumeOAuth(r *http.Request, provider string) (persist.OAuthTransaction, string, error) {
	q := r.URL.Query()
	if q.Get("error") != "" {
		return persist.OAuthTransaction{}, "", persist.Invalid("the sign-in was cancelled or refused at the provider; start again")
	}
	code, state := q.Get("code"), q.Get("state")
	if code == "" || state == "" {
		return persist.OAuthTransaction{}, "", persist.Invalid("the callback needs the code and state the provider sends")
	}
	binding, err := s.oauthBinding(r)
	if err != nil {
		return persist.OAuthTransaction{}, "", err
	}
	if binding == "" {
		return persist.OAuthTransaction{}, "", persist.Invalid("this browser did not start this sign-in (no %s cookie); start again", s.bindingCookieName())
	}
	ctx := r.Context()
	t, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.OAuthTransaction, error) {
		return tx.OAuthTransactionConsume(ctx, provider, state, binding)
	})
	return t, code, err
}

// finishBrowserSignIn sets the session cookie and sends the browser to the app.
func (s *Server) finishBrowserSignIn(w http.ResponseWriter, r *http.Request, res persist.SignedIn) {
	s.setSessionCookie(w, r, res.Token, res.Session.ExpiresAt)
	redirect(w, "/")
}

// redirect answers 302 to location, which is never cached.
func redirect(w http.ResponseWriter, location string) {
	w.Header().Set("Location", location)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusFound)
}

// AuthMethods lists the optional sign-in methods this server offers, in the form a web client's
// runtime configuration advertises them (ClickClack's `authMethods`): "github" when GitHub OAuth
// has credentials; "oidc" when OIDC has credentials, a discovered provider and --public-url.
// Magic links are always available and not listed.
func (s *Server) AuthMethods() []string {
	methods := []string{}
	if s.cfg.GitHub != nil {
		methods = append(methods, persist.ProviderGitHub)
	}
	if s.oidcReady() {
		methods = append(methods, persist.ProviderOIDC)
	}
	return methods
}
