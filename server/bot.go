package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

type botCreateRequest struct {
	DisplayName  string   `json:"display_name"`
	Handle       string   `json:"handle"`
	AvatarURL    string   `json:"avatar_url"`
	OwnerUserID  string   `json:"owner_user_id"`
	TokenName    string   `json:"token_name"`
	Scopes       []string `json:"scopes"`
	InitialToken *bool    `json:"initial_token"`
	SetupNonce   string   `json:"setup_nonce"`
}

// handleBotCreate serves POST /api/workspaces/{workspace_id}/bots: 201 {bot, bot_token}, or {bot}
// with initial_token=false; a setup_nonce replay answers 200 with the same bot (and the same
// token row under a fresh secret).
func (s *Server) handleBotCreate(w http.ResponseWriter, r *http.Request) {
	var req botCreateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	p := persist.BotCreateParams{OwnerUserID: req.OwnerUserID, DisplayName: req.DisplayName, Handle: req.Handle,
		AvatarURL: req.AvatarURL, InitialToken: req.InitialToken == nil || *req.InitialToken, TokenName: req.TokenName,
		Scopes: req.Scopes, SetupNonce: req.SetupNonce}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.BotCreated, error) {
		return tx.BotCreate(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"), p)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body := map[string]any{"bot": res.Bot.Public()}
	if res.Token != nil {
		body["bot_token"] = res.Token
	}
	status := http.StatusCreated
	if res.Replayed {
		status = http.StatusOK
	}
	writeJSON(w, status, body)
}

// handleBotList serves GET /api/workspaces/{workspace_id}/bots: {bots: [{bot, tokens}]}, tokens
// redacted.
func (s *Server) handleBotList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	bots, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) ([]persist.BotWithTokens, error) {
		return tx.BotListByWorkspace(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"bots": bots})
}

// handleMyBots serves GET /api/me/bots: the caller's user bots, one entry per workspace.
func (s *Server) handleMyBots(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	bots, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) ([]persist.OwnedBot, error) {
		return tx.BotListOwned(ctx, callerOf(ctx).User.ID)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"bots": bots})
}

// handleBotMembershipRemove serves DELETE /api/workspaces/{workspace_id}/bots/{bot_user_id}/membership:
// 204 once the bot is out of the workspace with its tokens there revoked.
func (s *Server) handleBotMembershipRemove(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	err := s.store.WithTx(ctx, func(tx *persist.Tx) error {
		return tx.BotMembershipRemove(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"), chi.URLParam(r, "bot_user_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeNoContent(w)
}

// handleBotDelete serves DELETE /api/bots/{bot_user_id}: {deleted_bot}; 404 once deleted.
func (s *Server) handleBotDelete(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	deleted, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.DeletedBot, error) {
		return tx.BotDelete(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "bot_user_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted_bot": deleted})
}
