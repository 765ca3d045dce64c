package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

type botTokenRequest struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
}

// handleBotTokenCreate serves POST /api/workspaces/{workspace_id}/bots/{bot_user_id}/tokens:
// 201 {bot_token} with the raw token, shown this once.
func (s *Server) handleBotTokenCreate(w http.ResponseWriter, r *http.Request) {
	s.serveBotTokenCreate(w, r, chi.URLParam(r, "workspace_id"))
}

// handleLegacyBotTokenCreate serves POST /api/bots/{bot_user_id}/tokens: as handleBotTokenCreate
// in the bot's only workspace.
func (s *Server) handleLegacyBotTokenCreate(w http.ResponseWriter, r *http.Request) {
	s.serveBotTokenCreate(w, r, "")
}

func (s *Server) serveBotTokenCreate(w http.ResponseWriter, r *http.Request, workspaceID string) {
	var req botTokenRequest
	if err := decodeOptionalJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	t, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.BotToken, error) {
		return tx.BotTokenCreate(ctx, callerOf(ctx).Actor(), workspaceID, chi.URLParam(r, "bot_user_id"),
			persist.BotTokenParams{Name: req.Name, Scopes: req.Scopes})
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"bot_token": t})
}

// handleBotTokenList serves GET /api/workspaces/{workspace_id}/bots/{bot_user_id}/tokens:
// {bot_tokens}, redacted.
func (s *Server) handleBotTokenList(w http.ResponseWriter, r *http.Request) {
	s.serveBotTokenList(w, r, chi.URLParam(r, "workspace_id"))
}

// handleLegacyBotTokenList serves GET /api/bots/{bot_user_id}/tokens: as handleBotTokenList in
// the bot's only workspace.
func (s *Server) handleLegacyBotTokenList(w http.ResponseWriter, r *http.Request) {
	s.serveBotTokenList(w, r, "")
}

func (s *Server) serveBotTokenList(w http.ResponseWriter, r *http.Request, workspaceID string) {
	ctx := r.Context()
	tokens, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) ([]persist.BotToken, error) {
		return tx.BotTokenList(ctx, callerOf(ctx).Actor(), workspaceID, chi.URLParam(r, "bot_user_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"bot_tokens": tokens})
}

// handleBotTokenRevoke serves POST /api/bot-tokens/{token_id}/revoke: {bot_token}; idempotent.
func (s *Server) handleBotTokenRevoke(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.BotToken, error) {
		return tx.BotTokenRevoke(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "token_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"bot_token": t})
}
