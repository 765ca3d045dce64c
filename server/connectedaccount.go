package server

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

type connectedAccountCreateRequest struct {
	UserID            string          `json:"user_id"`
	Provider          string          `json:"provider"`
	ProviderAccountID string          `json:"provider_account_id"`
	DisplayName       string          `json:"display_name"`
	Scopes            []string        `json:"scopes"`
	Metadata          json.RawMessage `json:"metadata"`
}

// handleConnectedAccountCreate serves POST /api/workspaces/{workspace_id}/connected-accounts:
// 201 {connected_account}.
func (s *Server) handleConnectedAccountCreate(w http.ResponseWriter, r *http.Request) {
	var req connectedAccountCreateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	a, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.ConnectedAccount, error) {
		return tx.ConnectedAccountCreate(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"),
			persist.ConnectedAccountCreateParams{UserID: req.UserID, Provider: req.Provider, ProviderAccountID: req.ProviderAccountID,
				DisplayName: req.DisplayName, Scopes: req.Scopes, Metadata: req.Metadata})
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"connected_account": a})
}

// handleConnectedAccountList serves GET /api/workspaces/{workspace_id}/connected-accounts:
// {connected_accounts}, the active ones.
func (s *Server) handleConnectedAccountList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	list, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) ([]persist.ConnectedAccount, error) {
		return tx.ConnectedAccountList(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"connected_accounts": list})
}

// handleConnectedAccountRevoke serves POST /api/connected-accounts/{account_id}/revoke:
// {connected_account}.
func (s *Server) handleConnectedAccountRevoke(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	a, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.ConnectedAccount, error) {
		return tx.ConnectedAccountRevoke(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "account_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"connected_account": a})
}

// handleAuditLogList serves GET /api/workspaces/{workspace_id}/audit-log: {audit_log_entries,
// next_cursor}, newest first; query limit (1-200, default 50) and before (an entry id).
func (s *Server) handleAuditLogList(w http.ResponseWriter, r *http.Request) {
	before, limit, err := parseNewestFirstPage(r.URL.Query(), persist.AuditPageDefault)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	page, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.AuditPage, error) {
		return tx.AuditLogList(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"), before, limit)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
