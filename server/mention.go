package server

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// handleMentionList serves GET /api/workspaces/{workspace_id}/mentions?limit=&cursor=:
// {messages, next_cursor}, the messages that mention the caller (@handle, @here, @channel,
// @everyone), newest first.
func (s *Server) handleMentionList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := persist.MentionListParams{WorkspaceID: chi.URLParam(r, "workspace_id"), Cursor: q.Get("cursor")}
	if raw := q.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			s.writeError(w, r, persist.Invalid("limit must be an integer between 1 and %d", persist.MaxMentionLimit))
			return
		}
		p.Limit = n
	}
	ctx := r.Context()
	page, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.MentionPage, error) {
		return tx.MentionList(ctx, callerOf(ctx).Actor(), p)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
