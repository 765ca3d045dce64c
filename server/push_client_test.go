package server_test

import (
	"net/http"
	"testing"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/realtime/push/pushtest"
)

// pushStatus is GET /api/me/push as a test reads it.
type pushStatus struct {
	Enabled         bool   `json:"enabled"`
	PublicKey       string `json:"public_key"`
	ThisDevice      bool   `json:"this_device"`
	ThisDeviceStale bool   `json:"this_device_stale"`
	Devices         []struct {
		Label         string `json:"label"`
		FailureCount  int    `json:"failure_count"`
		ThisDevice    bool   `json:"this_device"`
		LastSuccessAt string `json:"last_success_at"`
		LastFailureAt string `json:"last_failure_at"`
		BackoffUntil  string `json:"backoff_until"`
	} `json:"devices"`
}

// getPushStatus reads the caller's push status, device being the endpoint the page asks about.
func getPushStatus(t *testing.T, h *servertest.Harness, token, device string) pushStatus {
	t.Helper()
	r := h.Get(t, "/api/me/push?device="+device, token)
	r.RequireStatus(t, http.StatusOK)
	var st pushStatus
	r.Decode(t, &st)
	return st
}

// pushSubscribe registers d for a as the page of a's browser would.
func pushSubscribe(t *testing.T, h *servertest.Harness, a servertest.Actor, d *pushtest.Device, label string) *servertest.Response {
	t.Helper()
	body := d.Subscription()
	body["user_agent"], body["user_id"] = label, a.User.ID
	return h.Do(t, servertest.Request{Method: http.MethodPut, Path: "/api/me/push/subscriptions", Token: a.Token, Body: body})
}

// pushUnsubscribe removes the registration of endpoint as the page would.
func pushUnsubscribe(t *testing.T, h *servertest.Harness, token, userID, endpoint string) *servertest.Response {
	t.Helper()
	return h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/me/push/subscriptions", Token: token,
		Body: map[string]any{"endpoint": endpoint, "user_id": userID}})
}
