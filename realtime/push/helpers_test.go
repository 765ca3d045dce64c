package push_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/push/pushtest"
)

// The HTTP side of push (registration, GET /api/me/push) is tested in server; these helpers drive
// it as a browser would, so the deliverer's tests here start from real registrations.

// pushStatus is GET /api/me/push.
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

func getPush(t *testing.T, h *servertest.Harness, token, device string) pushStatus {
	t.Helper()
	r := h.Get(t, "/api/me/push?device="+device, token)
	r.RequireStatus(t, http.StatusOK)
	var st pushStatus
	r.Decode(t, &st)
	return st
}

// subscribe registers d for a as the page of a's browser would.
func subscribe(t *testing.T, h *servertest.Harness, a servertest.Actor, d *pushtest.Device, label string) *servertest.Response {
	t.Helper()
	body := d.Subscription()
	body["user_agent"], body["user_id"] = label, a.User.ID
	return h.Do(t, servertest.Request{Method: http.MethodPut, Path: "/api/me/push/subscriptions", Token: a.Token, Body: body})
}

func unsubscribe(t *testing.T, h *servertest.Harness, token, userID, endpoint string) *servertest.Response {
	t.Helper()
	return h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/me/push/subscriptions", Token: token,
		Body: map[string]any{"endpoint": endpoint, "user_id": userID}})
}

// testClock is a settable clock for the store (and so for the server).
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock {
	return &testClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *testClock) option() servertest.Option {
	return servertest.WithStoreOptions(persisttest.WithClock(c.Now))
}
