package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

type botCommandsRequest struct {
	Commands *[]persist.BotCommandInput `json:"commands"`
}

// handleBotCommandsReplace serves PUT /api/bots/self/commands: the calling bot's menu in its
// token's workspace becomes exactly commands ({commands: []} clears it); {bot_commands} sorted by
// command.
func (s *Server) handleBotCommandsReplace(w http.ResponseWriter, r *http.Request) {
	var req botCommandsRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Commands == nil {
		s.writeError(w, r, persist.Invalid("commands is required; send {\"commands\": []} to clear the menu"))
		return
	}
	ctx := r.Context()
	menu, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) ([]persist.BotCommand, error) {
		return tx.BotCommandsReplace(ctx, callerOf(ctx).Actor(), *req.Commands)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"bot_commands": menu})
}

// handleBotCommandList serves GET /api/workspaces/{workspace_id}/bot-commands: {bot_commands},
// every live bot's menu merged, sorted by bot handle then command.
func (s *Server) handleBotCommandList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	menu, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) ([]persist.WorkspaceBotCommand, error) {
		return tx.BotCommandListByWorkspace(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"bot_commands": menu})
}
