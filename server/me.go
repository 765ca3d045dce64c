package server

import (
	"net/http"

	"github.com/natterchat/natter/persist"
)

// meView is the caller's own account: the public profile plus what only they see.
type meView struct {
	persist.PublicUser
	Email                string               `json:"email,omitempty"`
	NotificationSettings notificationSettings `json:"notification_settings"`
	PasswordEnrolled     bool                 `json:"password_enrolled"`
}

type notificationSettings struct {
	PushoverEnabled bool   `json:"pushover_enabled"`
	PushoverUserKey string `json:"pushover_user_key"`
	// EmailEnabled and EmailDelay are the missed-activity emails (docs/notifications.md).
	EmailEnabled bool   `json:"email_enabled"`
	EmailDelay   string `json:"email_delay"`
}

func newMeView(u persist.User) meView {
	return meView{PublicUser: u.Public(), Email: u.Email, PasswordEnrolled: u.PasswordEnrolled,
		NotificationSettings: notificationSettings{PushoverEnabled: u.PushoverEnabled, PushoverUserKey: u.PushoverUserKey,
			EmailEnabled: u.EmailNotifications, EmailDelay: u.EmailDelay}}
}

// handleMeGet serves GET /api/me. The profile is read afresh: the caller's identity may come
// from the session cache, which a change of name or settings does not touch.
func (s *Server) handleMeGet(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	u, err := persist.ReadV(ctx, s.store, func(tx *persist.Reader) (persist.User, error) {
		return tx.UserGet(ctx, callerOf(ctx).User.ID)
	})
	if err == nil && u.DeletedAt != nil {
		err = persist.SessionEnded()
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"user": newMeView(u)})
}

type meUpdateRequest struct {
	DisplayName          *string `json:"display_name"`
	Handle               *string `json:"handle"`
	AvatarURL            *string `json:"avatar_url"`
	TimeZone             *string `json:"time_zone"`
	NotificationSettings *struct {
		PushoverEnabled *bool   `json:"pushover_enabled"`
		PushoverUserKey *string `json:"pushover_user_key"`
		EmailEnabled    *bool   `json:"email_enabled"`
		EmailDelay      *string `json:"email_delay"`
	} `json:"notification_settings"`
}

// handleMeUpdate serves PATCH /api/me: omitted fields stay unchanged.
func (s *Server) handleMeUpdate(w http.ResponseWriter, r *http.Request) {
	var req meUpdateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	patch := persist.UserPatch{DisplayName: req.DisplayName, Handle: req.Handle, AvatarURL: req.AvatarURL, TimeZone: req.TimeZone}
	if ns := req.NotificationSettings; ns != nil {
		patch.PushoverEnabled, patch.PushoverUserKey = ns.PushoverEnabled, ns.PushoverUserKey
		patch.EmailNotifications, patch.EmailDelay = ns.EmailEnabled, ns.EmailDelay
	}
	ctx := r.Context()
	u, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.User, error) {
		return tx.UserUpdate(ctx, callerOf(ctx).User.ID, patch)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"user": newMeView(u)})
}
