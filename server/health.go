package server

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/natterchat/natter/persist"
)

// handleHealthz serves GET /healthz: the process is alive.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReadyz serves GET /readyz: 200 when the database answers and every ready check passes,
// 503 naming the failing parts (without their errors, which are logged) when not.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var failing []string
	check := func(name string, err error) {
		if err != nil {
			s.logger.Warn("readiness check failed", "correlation_id", correlationID(r.Context()), "check", name, "error", err)
			failing = append(failing, name)
		}
	}
	check("database", s.store.Ping(ctx))
	for _, name := range slices.Sorted(maps.Keys(s.cfg.ReadyChecks)) {
		check(name, s.cfg.ReadyChecks[name](ctx))
	}
	if len(failing) > 0 {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "failing": failing})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// Starting answers for a server still waiting for its database at start-up, before its API
// exists: /healthz 200 (the process is alive), /readyz 503 naming the database, and every other
// request 503 unavailable with Retry-After, so a load balancer and clients wait rather than
// fail.
func Starting() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		case "/readyz":
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "starting", "failing": []string{"database"}})
		default:
			w.Header().Set("Retry-After", retryAfterOutage)
			writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "the server is starting and cannot reach its database yet; try again shortly",
				Code: persist.CodeUnavailable})
		}
	})
}
