package server

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// noEvent is the event field of a mutation that changed nothing: every field empty.
var noEvent = map[string]any{"id": "", "cursor": "", "type": "", "workspace_id": "", "payload": map[string]any{}}

// handleReactionAdd serves POST /api/messages/{message_id}/reactions: 201 {message_id,
// reactions, event}, or 200 with an empty event when the reaction was already there.
func (s *Server) handleReactionAdd(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Emoji string `json:"emoji"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	res, err := persist.BatchOnMessage(ctx, s.store, chi.URLParam(r, "message_id"), func(tx *persist.Tx) (persist.ReactionChange, error) {
		return tx.ReactionAdd(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "message_id"), req.Emoji)
	})
	s.writeReactionChange(w, r, res, err, http.StatusCreated)
}

// handleReactionRemove serves DELETE /api/messages/{message_id}/reactions/{emoji}. The emoji
// is one path segment decoded exactly once (%25 is "%", %2F is "/"), so it is read from the
// escaped path rather than from the router, which may have decoded it already.
func (s *Server) handleReactionRemove(w http.ResponseWriter, r *http.Request) {
	escaped := r.URL.EscapedPath()
	emoji, err := url.PathUnescape(escaped[strings.LastIndex(escaped, "/")+1:])
	if err != nil {
		s.writeError(w, r, persist.Invalid("the emoji must be URL-encoded once as one path segment"))
		return
	}
	ctx := r.Context()
	res, err := persist.BatchOnMessage(ctx, s.store, chi.URLParam(r, "message_id"), func(tx *persist.Tx) (persist.ReactionChange, error) {
		return tx.ReactionRemove(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "message_id"), emoji)
	})
	s.writeReactionChange(w, r, res, err, http.StatusOK)
}

func (s *Server) writeReactionChange(w http.ResponseWriter, r *http.Request, res persist.ReactionChange, err error, changed int) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !res.Changed() {
		writeJSON(w, http.StatusOK, map[string]any{"message_id": res.MessageID, "reactions": res.Reactions, "event": noEvent})
		return
	}
	writeJSON(w, changed, map[string]any{"message_id": res.MessageID, "reactions": res.Reactions, "event": res.Event})
}
