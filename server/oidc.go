package server

import (
	"net/http"

	"github.com/natterchat/natter/persist"
)

// OIDC sign-in (§OIDC sign-in): start and callback. There is no desktop handoff for OIDC.

const oidcCallbackPath = "/api/auth/oidc/callback"

// oidcReady reports whether OIDC sign-in can run: credentials, a discovered provider and the
// public URL its callback derives from.
func (s *Server) oidcReady() bool { return s.cfg.OIDC != nil && s.publicOrigin != "" }

// oidcConfigured answers 501 unless OIDC sign-in can run.
func (s *Server) oidcConfigured(w http.ResponseWriter, r *http.Request) bool {
	if !s.oidcReady() {
		s.writeError(w, r, persist.Errorf(persist.CodeNotImplemented,
			"OIDC sign-in is not configured on this server (--oidc-client-id, --oidc-client-secret and --public-url)"))
		return false
	}
	return true
}

// handleOIDCStart serves GET /api/auth/oidc/start: it records an OAuth transaction (the same
// store, binding cookie and PKCE as GitHub) and redirects to the discovered authorization
// endpoint with scope `openid profile email`.
func (s *Server) handleOIDCStart(w http.ResponseWriter, r *http.Request) {
	if !s.oidcConfigured(w, r) {
		return
	}
	s.startOAuth(w, r, oauthStart{provider: persist.ProviderOIDC, redirectURI: s.publicOrigin + oidcCallbackPath,
		authorize: s.cfg.OIDC.AuthorizeURL})
}

// handleOIDCCallback serves GET /api/auth/oidc/callback?code=&state=: it consumes the
// transaction (only from the browser that started it), exchanges the code, checks the
// id_token's issuer, audience, expiry and verified email (403 without one), links or creates the
// user by email, joins the default workspace, sets the session cookie and redirects to `/`.
func (s *Server) handleOIDCCallback(w http.ResponseWriter, r *http.Request) {
	if !s.oidcConfigured(w, r) {
		return
	}
	txn, code, err := s.consumeOAuth(r, persist.ProviderOIDC)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	account, err := s.cfg.OIDC.SignIn(ctx, code, txn.Verifier, txn.RedirectURI, s.store.Now())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.SignedIn, error) {
		return tx.OIDCSignIn(ctx, account.Email, account.Name)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.finishBrowserSignIn(w, r, res)
}
