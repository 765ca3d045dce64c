package server

import (
	_ "embed"
	"net/http"
)

// openAPIDocument describes every route of routeTable; TestOpenAPICoversRoutes keeps it complete.
//
//go:embed openapi.json
var openAPIDocument []byte

// handleOpenAPI serves GET /api/openapi.json.
func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDocument)
}
