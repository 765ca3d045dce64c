package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// handlePinList serves GET /api/channels/{channel_id}/pins: {messages, pins}, newest pin first.
// messages are the full pinned messages, the shape ClickClack clients read; pins, in the same
// order, say who pinned each and when.
func (s *Server) handlePinList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	pins, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) ([]persist.Pin, error) {
		return tx.PinList(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "channel_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	messages := make([]*persist.Message, len(pins))
	for i := range pins {
		messages[i], pins[i].Message = pins[i].Message, nil
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": messages, "pins": pins})
}

type pinChange struct {
	pin persist.Pin
	ev  persist.Event
}

// handlePinAdd serves POST /api/channels/{channel_id}/pins: 201 {event, pinned_message, pin}, the
// pinned message in full.
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
	msg := res.pin.Message
	res.pin.Message = nil
	writeJSON(w, http.StatusCreated, map[string]any{"event": res.ev, "pinned_message": msg, "pin": res.pin})
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
