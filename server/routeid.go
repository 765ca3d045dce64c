package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// handleRouteResolve serves GET /api/routes/{workspace_route_id}/{target_route_id}: public or
// internal ids in, canonical ids out, after the permission check.
func (s *Server) handleRouteResolve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	rt, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.RouteTarget, error) {
		return tx.RouteResolve(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_route_id"), chi.URLParam(r, "target_route_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"route": rt})
}
