package server

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

type appInstallationCreateRequest struct {
	AppSlug     string          `json:"app_slug"`
	DisplayName string          `json:"display_name"`
	BotUserID   string          `json:"bot_user_id"`
	Config      json.RawMessage `json:"config"`
	SetupNonce  string          `json:"setup_nonce"`
	TokenName   string          `json:"token_name"`
	Scopes      []string        `json:"scopes"`
}

// handleAppInstallationCreate serves POST /api/workspaces/{workspace_id}/app-installations:
// 201 {app_installation, bot_token}; a setup_nonce replay answers 200 with the same
// installation and token row under a fresh raw token.
func (s *Server) handleAppInstallationCreate(w http.ResponseWriter, r *http.Request) {
	var req appInstallationCreateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.AppInstallationCreated, error) {
		return tx.AppInstallationCreate(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"),
			persist.AppInstallationCreateParams{AppSlug: req.AppSlug, DisplayName: req.DisplayName, BotUserID: req.BotUserID,
				Config: req.Config, SetupNonce: req.SetupNonce, TokenName: req.TokenName, Scopes: req.Scopes})
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusCreated
	if res.Replayed {
		status = http.StatusOK
	}
	writeJSON(w, status, map[string]any{"app_installation": res.Installation, "bot_token": res.Token})
}

// handleAppInstallationList serves GET /api/workspaces/{workspace_id}/app-installations:
// {app_installations}, the active ones.
func (s *Server) handleAppInstallationList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	list, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) ([]persist.AppInstallation, error) {
		return tx.AppInstallationList(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"app_installations": list})
}

type appInstallationRevokeRequest struct {
	RevokeSlashCommands      *bool `json:"revoke_slash_commands"`
	RevokeEventSubscriptions *bool `json:"revoke_event_subscriptions"`
	RevokeBotTokens          bool  `json:"revoke_bot_tokens"`
	DeleteBot                bool  `json:"delete_bot"`
}

// handleAppInstallationRevoke serves POST /api/app-installations/{installation_id}/revoke:
// {installation, revoked: {slash_commands, event_subscriptions, bot_tokens}, deleted_bot?}.
func (s *Server) handleAppInstallationRevoke(w http.ResponseWriter, r *http.Request) {
	var req appInstallationRevokeRequest
	if err := decodeOptionalJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	p := persist.AppInstallationRevokeParams{SlashCommands: req.RevokeSlashCommands == nil || *req.RevokeSlashCommands,
		EventSubscriptions: req.RevokeEventSubscriptions == nil || *req.RevokeEventSubscriptions,
		BotTokens:          req.RevokeBotTokens, DeleteBot: req.DeleteBot}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.AppInstallationRevoked, error) {
		return tx.AppInstallationRevoke(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "installation_id"), p)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
