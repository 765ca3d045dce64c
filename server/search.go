package server

import (
	"net/http"
	"strconv"

	"github.com/natterchat/natter/persist"
)

// handleSearch serves GET /api/search: {results, next_cursor}.
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := persist.SearchParams{WorkspaceID: q.Get("workspace_id"), Query: q.Get("q"), ChannelID: q.Get("channel_id"),
		DMID: q.Get("direct_conversation_id"), Sort: q.Get("sort"), Cursor: q.Get("cursor")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.writeError(w, r, persist.Invalid("limit must be 1 to %d", persist.MaxSearchLimit))
			return
		}
		p.Limit = n
	}
	ctx := r.Context()
	page, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.SearchPage, error) {
		return tx.Search(ctx, callerOf(ctx).Actor(), p)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
