package pushtest

import (
	"net/http"
	"testing"

	"github.com/natterchat/natter/admin/servertest"
)

// Status is GET /api/me/push as a test reads it.
type Status struct {
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

// GetStatus reads the caller's push status, device being the endpoint the page asks about.
func GetStatus(t *testing.T, h *servertest.Harness, token, device string) Status {
	t.Helper()
	r := h.Get(t, "/api/me/push?device="+device, token)
	r.RequireStatus(t, http.StatusOK)
	var st Status
	r.Decode(t, &st)
	return st
}

// Subscribe registers d for a as the page of a's browser would.
func Subscribe(t *testing.T, h *servertest.Harness, a servertest.Actor, d *Device, label string) *servertest.Response {
	t.Helper()
	body := d.Subscription()
	body["user_agent"], body["user_id"] = label, a.User.ID
	return h.Do(t, servertest.Request{Method: http.MethodPut, Path: "/api/me/push/subscriptions", Token: a.Token, Body: body})
}

// Unsubscribe removes the registration of endpoint as the page would.
func Unsubscribe(t *testing.T, h *servertest.Harness, token, userID, endpoint string) *servertest.Response {
	t.Helper()
	return h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/me/push/subscriptions", Token: token,
		Body: map[string]any{"endpoint": endpoint, "user_id": userID}})
}
