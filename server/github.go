package server

import (
	"net/http"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/signin"
)

// GitHub sign-in (§Code-hosting OAuth): browser and desktop starts, the callback, and the
// desktop grant redemption.

const githubCallbackPath = "/api/auth/github/callback"

// githubConfigured answers 501 when GitHub sign-in has no credentials.
func (s *Server) githubConfigured(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.GitHub == nil {
		s.writeError(w, r, persist.Errorf(persist.CodeNotImplemented,
			"GitHub sign-in is not configured on this server (--github-client-id and --github-client-secret)"))
		return false
	}
	return true
}

// handleGitHubStart serves GET /api/auth/github/start: it records an OAuth transaction, sets the
// browser-binding cookie and redirects to GitHub.
func (s *Server) handleGitHubStart(w http.ResponseWriter, r *http.Request) {
	if !s.githubConfigured(w, r) {
		return
	}
	redirectURI, err := s.oauthRedirectURI(r, githubCallbackPath)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.startOAuth(w, r, oauthStart{provider: persist.ProviderGitHub, redirectURI: redirectURI, authorize: s.cfg.GitHub.AuthorizeURL})
}

// handleGitHubDesktopStart serves GET /api/auth/github/desktop/start?code_challenge=&desktop_protocol=:
// the desktop app's system-browser sign-in. The challenge is the app's S256 PKCE challenge;
// desktop_protocol is 1 (the default) or 2. Protocol 1 is refused with 426 on a namespaced
// deployment, before anything is recorded or redirected.
func (s *Server) handleGitHubDesktopStart(w http.ResponseWriter, r *http.Request) {
	if !s.githubConfigured(w, r) {
		return
	}
	q := r.URL.Query()
	challenge := q.Get("code_challenge")
	if !signin.ValidChallenge(challenge) {
		s.writeError(w, r, persist.Invalid("code_challenge must be the app's S256 PKCE challenge: 43 base64url characters"))
		return
	}
	protocol := signin.DesktopProtocolLegacy
	switch q.Get("desktop_protocol") {
	case "", "1":
	case "2":
		protocol = signin.DesktopProtocolCurrent
	default:
		s.writeError(w, r, persist.Invalid("desktop_protocol must be 1 or 2"))
		return
	}
	if err := s.desktopProtocolServed(protocol); err != nil {
		s.writeError(w, r, err)
		return
	}
	redirectURI, err := s.oauthRedirectURI(r, githubCallbackPath)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.startOAuth(w, r, oauthStart{provider: persist.ProviderGitHub, redirectURI: redirectURI,
		desktopChallenge: challenge, desktopProtocol: protocol, authorize: s.cfg.GitHub.AuthorizeURL})
}

// desktopProtocolServed refuses protocol 1 on a namespaced deployment: that client cannot verify
// a namespaced session. Codes: upgrade_required.
func (s *Server) desktopProtocolServed(protocol int) error {
	if protocol == signin.DesktopProtocolLegacy && s.cfg.CookieNamespace != "" {
		return persist.Errorf(persist.CodeUpgradeRequired,
			"this server uses namespaced cookies, which desktop handoff protocol 1 cannot use; update the desktop app")
	}
	return nil
}

// handleGitHubCallback serves GET /api/auth/github/callback?code=&state=: it consumes the
// transaction (only from the browser that started it), finishes the sign-in at GitHub, upserts
// the identity, joins the workspace and either starts a session (cookie set, redirect to `/`)
// or, for a desktop start, records a one-time grant and redirects to the desktop app.
func (s *Server) handleGitHubCallback(w http.ResponseWriter, r *http.Request) {
	if !s.githubConfigured(w, r) {
		return
	}
	txn, code, err := s.consumeOAuth(r, persist.ProviderGitHub)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.desktopProtocolServed(txn.DesktopProtocol); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	identity, place, err := s.cfg.GitHub.SignIn(ctx, code, txn.Verifier, txn.RedirectURI)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	in := persist.IdentitySignIn{Identity: identity, Place: place}
	if txn.DesktopProtocol != 0 {
		in.Desktop = &persist.DesktopGrant{Grant: signin.NewGrant(txn.DesktopProtocol), Challenge: txn.DesktopChallenge,
			Limits: s.cfg.OAuthLimits}
	}
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.SignedIn, error) {
		return tx.IdentitySignIn(ctx, in)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.Desktop != nil {
		redirect(w, signin.DesktopCallback(txn.DesktopProtocol, s.cfg.DesktopScheme, s.cfg.LegacyDesktopScheme, in.Desktop.Grant))
		return
	}
	s.finishBrowserSignIn(w, r, res)
}

type desktopConsumeRequest struct {
	Code         string `json:"code"`
	CodeVerifier string `json:"code_verifier"`
}

// handleGitHubDesktopConsume serves POST /api/auth/github/desktop/consume {code, code_verifier}:
// it redeems a one-time desktop grant with the verifier of the challenge the app started with,
// answers {user, session, token} and sets the session cookie. JSON only, never from another site.
func (s *Server) handleGitHubDesktopConsume(w http.ResponseWriter, r *http.Request) {
	if err := s.signInPreflight(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req desktopConsumeRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if !signin.ValidGrant(req.Code) {
		s.writeError(w, r, persist.Invalid("code must be a desktop grant: 32 lowercase hex characters (protocol 1) or 43 base64url characters (protocol 2)"))
		return
	}
	if !signin.ValidVerifier(req.CodeVerifier) {
		s.writeError(w, r, persist.Invalid("code_verifier must be 43 to 128 base64url characters"))
		return
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.SignedIn, error) {
		return tx.DesktopGrantConsume(ctx, req.Code, signin.Challenge(req.CodeVerifier))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeSignIn(w, r, res.User, res.Session, res.Token)
}
