package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// handlePinList serves GET /api/channels/{channel_id}/pins: {pins}, newest pin first, each
// with its full message.
func (s *Server) handlePinList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	pins, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) ([]persist.Pin, error) {
		return tx.PinList(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "channel_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"pins": pins})
}

type pinChange struct {
	pin persist.Pin
	ev  persist.Event
}

// handlePinAdd serves POST /api/channels/{channel_id}/pins: 201 {pin, event}.
func (s *Server) handlePinAdd(w http.ResponseWriter, r *http.Request) {
	var req struct {
		MessageID string `json:"message_id"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.MessageID == "" {
		s.writeError(w, r, persist.Invalid("message_id is required"))
		return
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (pinChange, error) {
		p, ev, err := tx.PinAdd(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "channel_id"), req.MessageID)
		return pinChange{p, ev}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"pin": res.pin, "event": res.ev})
}

// handlePinRemove serves DELETE /api/channels/{channel_id}/pins/{message_id}: {pin, event}.
func (s *Server) handlePinRemove(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (pinChange, error) {
		p, ev, err := tx.PinRemove(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "channel_id"), chi.URLParam(r, "message_id"))
		return pinChange{p, ev}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"pin": res.pin, "event": res.ev})
}
