package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// handleNotificationPreferenceGet serves GET /api/channels/{channel_id}/notification-preference.
func (s *Server) handleNotificationPreferenceGet(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.NotificationPreference, error) {
		return tx.NotificationPreferenceGet(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "channel_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"notification_preference": p})
}

// handleNotificationPreferenceSet serves PUT /api/channels/{channel_id}/notification-preference.
func (s *Server) handleNotificationPreferenceSet(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Level string `json:"level"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	type set struct {
		pref     persist.NotificationPreference
		standing persist.Event
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (set, error) {
		actor := callerOf(ctx).Actor()
		p, err := tx.NotificationPreferenceSet(ctx, actor, chi.URLParam(r, "channel_id"), req.Level)
		if err != nil {
			return set{}, err
		}
		ev, err := tx.ChannelStandingEvent(ctx, actor, p.ChannelID)
		return set{p, ev}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.publishStanding(r, res.standing)
	writeJSON(w, http.StatusOK, map[string]any{"notification_preference": res.pref})
}
