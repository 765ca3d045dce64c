package server

import (
	"net/http"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/realtime/push"
)

// PushRegistrant is the caller as a push registration sees it: the session the request came
// with, or the loopback development identity, which has none.
func (c *Caller) PushRegistrant() persist.PushRegistrant {
	r := persist.PushRegistrant{UserID: c.User.ID, Dev: c.Via == viaDevHeader || c.Via == viaDevFallback}
	if c.Session != nil {
		r.SessionID = c.Session.ID
	}
	return r
}

// handlePushStatus serves GET /api/me/push.
func (s *Server) handlePushStatus(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	device := r.URL.Query().Get("device")
	st, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.PushStatus, error) {
		return tx.PushStatusGet(ctx, callerOf(ctx).User.ID, device, s.cfg.DisableWebPush)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// pushKeys are a subscription's keys as PushSubscription.toJSON() gives them.
type pushKeys struct {
	P256dh string `json:"p256dh"`
	Auth   string `json:"auth"`
}

// pushSubscription is the browser's PushSubscription.toJSON().
type pushSubscription struct {
	Endpoint string   `json:"endpoint"`
	Keys     pushKeys `json:"keys"`
}

// pushSubscribeRequest is the body of PUT and DELETE /api/me/push/subscriptions: the browser's
// subscription, either spread at the top level or under "subscription", with the label and the
// account the page believes is signed in.
type pushSubscribeRequest struct {
	pushSubscription
	Subscription *pushSubscription `json:"subscription"`
	UserAgent    string            `json:"user_agent"`
	UserID       string            `json:"user_id"`
}

func (req *pushSubscribeRequest) subscription() pushSubscription {
	if req.Subscription != nil {
		return *req.Subscription
	}
	return req.pushSubscription
}

// handlePushSubscribe serves PUT /api/me/push/subscriptions.
func (s *Server) handlePushSubscribe(w http.ResponseWriter, r *http.Request) {
	var req pushSubscribeRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	sub := req.subscription()
	in := persist.PushRegistration{UserID: req.UserID, Disabled: s.cfg.DisableWebPush}
	// A malformed subscription is reported after the guards (push enabled, a session, the right
	// account), which answer first whatever the body holds.
	in.Subscription, in.Invalid = push.ParseSubscription(sub.Endpoint, sub.Keys.P256dh, sub.Keys.Auth, req.UserAgent, s.pushPolicy)
	ctx := r.Context()
	d, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.PushDevice, error) {
		return tx.PushDeviceRegister(ctx, callerOf(ctx).PushRegistrant(), in)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"device": d})
}

// handlePushUnsubscribe serves DELETE /api/me/push/subscriptions.
func (s *Server) handlePushUnsubscribe(w http.ResponseWriter, r *http.Request) {
	var req pushSubscribeRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	in := persist.PushRegistration{UserID: req.UserID, Disabled: s.cfg.DisableWebPush,
		Subscription: persist.PushSubscription{Endpoint: req.subscription().Endpoint}}
	if in.Subscription.Endpoint == "" {
		in.Invalid = persist.Invalid("endpoint is required")
	}
	ctx := r.Context()
	removed, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (bool, error) {
		return tx.PushDeviceRemove(ctx, callerOf(ctx).PushRegistrant(), in)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"removed": removed})
}
