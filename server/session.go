package server

import (
	"net/http"

	"github.com/natterchat/natter/persist"
)

// callerSessionID is the session the request came with, "" for a caller without one (the
// loopback development identity).
func callerSessionID(c *Caller) string {
	if c.Session == nil {
		return ""
	}
	return c.Session.ID
}

// handleSessionList serves GET /api/me/sessions: where the caller is signed in, the calling
// session marked current. Tokens are never shown.
func (s *Server) handleSessionList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c := callerOf(ctx)
	list, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) ([]persist.LiveSession, error) {
		return tx.SessionList(ctx, c.User.ID, callerSessionID(c))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": list})
}

// handleSessionRevokeOthers serves POST /api/me/sessions/revoke-others: signs the caller out
// everywhere else, keeping the calling session; their sockets close with 1008.
func (s *Server) handleSessionRevokeOthers(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c := callerOf(ctx)
	n, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (int, error) {
		return tx.SessionRevokeOthers(ctx, c.User.ID, callerSessionID(c))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"revoked": n})
}
