package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// handleChannelRead serves POST /api/channels/{channel_id}/read.
func (s *Server) handleChannelRead(w http.ResponseWriter, r *http.Request) {
	s.readMark(w, r, persist.Place{ChannelID: chi.URLParam(r, "channel_id")})
}

// handleDMRead serves POST /api/dms/{conversation_id}/read.
func (s *Server) handleDMRead(w http.ResponseWriter, r *http.Request) {
	s.readMark(w, r, persist.Place{DMID: chi.URLParam(r, "conversation_id")})
}

// readMark answers {receipt}: the caller's receipt in a place after moving it forward to seq.
func (s *Server) readMark(w http.ResponseWriter, r *http.Request, p persist.Place) {
	s.markRead(w, r, func(tx *persist.Tx, actor persist.Actor, seq int64) (persist.Receipt, error) {
		return tx.ReadMark(r.Context(), actor, p, seq)
	})
}

// markRead decodes {seq}, moves a read position forward with mark in one transaction and answers
// {receipt}: the one shape of every read-mark route (places and threads).
func (s *Server) markRead(w http.ResponseWriter, r *http.Request, mark func(*persist.Tx, persist.Actor, int64) (persist.Receipt, error)) {
	var req struct {
		Seq *int64 `json:"seq"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Seq == nil {
		s.writeError(w, r, persist.Invalid("seq is required"))
		return
	}
	ctx := r.Context()
	rc, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.Receipt, error) {
		return mark(tx, callerOf(ctx).Actor(), *req.Seq)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"receipt": rc})
}
