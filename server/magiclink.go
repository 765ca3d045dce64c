package server

import (
	"net/http"
	"time"

	"github.com/natterchat/natter/persist"
)

type magicLinkRequest struct {
	Email       string `json:"email"`
	DisplayName string `json:"display_name"`
}

// handleMagicLinkRequest serves POST /api/auth/magic/request. With email configured the link is
// emailed (server/email.go). Without, the token is handed back directly, so this works only in development (dev auth on) and only for local
// clients; elsewhere it is 501 (off) or 403 (not local).
func (s *Server) handleMagicLinkRequest(w http.ResponseWriter, r *http.Request) {
	if s.mail != nil {
		s.mailMagicLink(w, r)
		return
	}
	if !s.cfg.DevAuth {
		s.writeError(w, r, persist.Errorf(persist.CodeNotImplemented, "magic-link sign-in by API is off; ask an operator for a link (natter admin magic-link create)"))
		return
	}
	if !isLocalRequest(r) {
		s.writeError(w, r, persist.Forbidden("development magic links are issued only to loopback clients on a local host"))
		return
	}
	var req magicLinkRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	token, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (string, error) {
		return tx.MagicLinkCreate(ctx, req.Email, req.DisplayName)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"token": token, "expires_at": s.store.Now().UTC().Add(persist.MagicLinkLifetime)})
}

type magicLinkConsumeRequest struct {
	Token string `json:"token"`
}

type sessionView struct {
	ID        string    `json:"id"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// handleMagicLinkConsume serves POST /api/auth/magic/consume: it trades a magic-link token for a
// session, answers {user, session, token} and sets the session cookie.
func (s *Server) handleMagicLinkConsume(w http.ResponseWriter, r *http.Request) {
	if err := s.signInPreflight(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req magicLinkConsumeRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	type result struct {
		user    persist.User
		session persist.Session
		token   string
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (result, error) {
		u, sess, token, err := tx.MagicLinkConsume(ctx, req.Token)
		return result{u, sess, token}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeSignIn(w, r, res.user, res.session, res.token)
}

// writeSignIn answers every sign-in that creates a session from a request body: it sets the
// session cookie and returns {user, session, token}; non-browser clients keep session.token for
// the Authorization header.
func (s *Server) writeSignIn(w http.ResponseWriter, r *http.Request, u persist.User, sess persist.Session, token string) {
	s.setSessionCookie(w, r, token, sess.ExpiresAt)
	writeJSON(w, http.StatusOK, map[string]any{
		"user":    newMeView(u),
		"session": sessionView{ID: sess.ID, Token: token, ExpiresAt: sess.ExpiresAt},
		"token":   token,
	})
}

// signInPreflight is the rule of every endpoint that creates or changes sign-in state from a
// body: JSON only, and never from another site.
func (s *Server) signInPreflight(r *http.Request) error {
	if err := requireJSONContent(r); err != nil {
		return err
	}
	if !s.sameOrigin(r) {
		return persist.Errorf(persist.CodeCrossSite, "sign-in requests from another site are refused")
	}
	return nil
}

// handleLogout serves POST /api/auth/logout: it revokes the session the request presents
// (bearer first, then cookie) and expires the cookie. It succeeds whether or not anything was
// live; a bot token revokes nothing.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	token := s.presentedSessionToken(r)
	ctx := r.Context()
	if len(token) > len(persist.PrefixSessionToken) && token[:len(persist.PrefixSessionToken)] == persist.PrefixSessionToken {
		if err := s.store.WithTx(ctx, func(tx *persist.Tx) error { return tx.SessionRevoke(ctx, token) }); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	s.clearSessionCookie(w, r)
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (s *Server) setSessionCookie(w http.ResponseWriter, r *http.Request, token string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{Name: s.cookieName, Value: token, Path: "/", Expires: expires,
		HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode})
}

func (s *Server) clearSessionCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: s.cookieName, Value: "", Path: "/", MaxAge: -1,
		Expires: time.Unix(0, 0), HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode})
}

// secureCookies is true except for local development over plain HTTP.
func (s *Server) secureCookies(r *http.Request) bool {
	if s.publicOrigin != "" {
		return len(s.publicOrigin) > 5 && s.publicOrigin[:6] == "https:"
	}
	return r.TLS != nil || !isLocalRequest(r)
}
