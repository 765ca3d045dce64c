package push_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/push"
)

// Pushover test credentials: an application token and a user key have Pushover's shape (30
// letters and digits).
const (
	fakePushoverToken = "azGDORePK8gMaC0QOYAMyEEuzJnyUi"
	carolPushoverKey  = "uQiRzpo4DXghDmr9QzzfQu27cmVRsG"
)

// fakePushover is Pushover's message API: it records each form it is sent and answers with the
// status the test sets (200 {"status":1} by default).
type fakePushover struct {
	srv      *httptest.Server
	mu       sync.Mutex
	status   int
	received chan url.Values
}

func newFakePushover(t *testing.T) *fakePushover {
	f := &fakePushover{status: http.StatusOK, received: make(chan url.Values, 64)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/1/messages.json" || r.ParseForm() != nil {
			http.Error(w, `{"status":0}`, http.StatusBadRequest)
			return
		}
		f.received <- r.PostForm
		f.mu.Lock()
		status := f.status
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status == http.StatusOK {
			_ = json.NewEncoder(w).Encode(map[string]any{"status": 1, "request": "req-1"})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": 0, "errors": []string{"something went wrong"}})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakePushover) next(t *testing.T) url.Values {
	t.Helper()
	select {
	case v := <-f.received:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("nothing reached the Pushover API")
		return nil
	}
}

func (f *fakePushover) requireNothing(t *testing.T) {
	t.Helper()
	select {
	case v := <-f.received:
		t.Fatalf("unexpected Pushover call: %v", v)
	default:
	}
}

// pushoverWorld is a push world whose deliverer has a Pushover token pointed at the fake API,
// with carol (handle @carol) in the workspace, Pushover enabled and no device.
func pushoverWorld(t *testing.T, api *fakePushover, edit func(*push.Config)) (*pushWorld, servertest.Actor) {
	w := newPushWorld(t, func(c *push.Config) {
		c.PushoverToken = fakePushoverToken
		c.PushoverAPI = api.srv.URL + "/1/messages.json"
		if edit != nil {
			edit(c)
		}
	})
	carol := w.person(t, "Carol Shaw", "carol")
	persisttest.Member(t, w.h.Store, w.ws.ID, carol.User.ID, persist.RoleMember)
	setPushover(t, w, carol, true)
	return w, carol
}

func setPushover(t *testing.T, w *pushWorld, a servertest.Actor, enabled bool) {
	t.Helper()
	w.h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: a.Token, Body: map[string]any{
		"notification_settings": map[string]any{"pushover_enabled": enabled, "pushover_user_key": carolPushoverKey}}}).
		RequireStatus(t, http.StatusOK)
}

func TestPushover(t *testing.T) {
	t.Parallel()

	t.Run("DirectMessagesAndMentions", func(t *testing.T) {
		t.Parallel()
		api := newFakePushover(t)
		w, carol := pushoverWorld(t, api, nil)
		dm := w.dm(t, w.ada, carol)
		w.post(t, w.ada, "/api/dms/"+dm+"/messages", "lunch?")
		got := api.next(t)
		require.Equal(t, fakePushoverToken, got.Get("token"))
		require.Equal(t, carolPushoverKey, got.Get("user"))
		require.Equal(t, "Ada Lovelace", got.Get("title"))
		require.Equal(t, "lunch?", got.Get("message"))
		d := w.next(t)
		require.True(t, d.push.Pushover)
		require.Equal(t, carol.User.ID, d.push.UserID)
		require.Equal(t, "delivered", d.outcome.Result)

		// carol is at the default level for #general: mentions only.
		w.inGeneral(t, "morning all")
		w.inGeneral(t, "@carol can you look?")
		got = api.next(t)
		require.Equal(t, "@carol can you look?", got.Get("message"), "the plain message notified nobody")
		require.Equal(t, "Ada Lovelace in #general", got.Get("title"))
		w.setLevel(t, carol, persist.NotifyMuted)
		w.inGeneral(t, "@carol muted anyway")
		w.post(t, w.ada, "/api/dms/"+dm+"/messages", "direct conversations always notify")
		require.Equal(t, "direct conversations always notify", api.next(t).Get("message"), "nothing was sent while muted")
		w.requireNothingSent(t)
	})

	t.Run("RecheckedBeforeSending", func(t *testing.T) {
		t.Parallel()
		api := newFakePushover(t)
		w, carol := pushoverWorld(t, api, nil)
		dm := w.dm(t, w.ada, carol)
		w.gated.Store(true)
		w.post(t, w.ada, "/api/dms/"+dm+"/messages", "are you there?")
		require.True(t, w.held(t).Pushover)
		setPushover(t, w, carol, false)
		w.release <- struct{}{}
		require.Equal(t, persist.PushDropPushoverOff, w.next(t).outcome.Dropped)

		setPushover(t, w, carol, true)
		id := w.post(t, w.ada, "/api/dms/"+dm+"/messages", "deleted before it is sent")
		w.held(t)
		w.h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/messages/" + id, Token: w.ada.Token}).
			RequireStatus(t, http.StatusOK)
		w.release <- struct{}{}
		require.Equal(t, persist.PushDropMessageDeleted, w.next(t).outcome.Dropped)
		api.requireNothing(t)
	})

	t.Run("FailuresBackOff", func(t *testing.T) {
		t.Parallel()
		api := newFakePushover(t)
		w, carol := pushoverWorld(t, api, nil)
		api.mu.Lock()
		api.status = http.StatusInternalServerError
		api.mu.Unlock()
		dm := w.dm(t, w.ada, carol)
		w.post(t, w.ada, "/api/dms/"+dm+"/messages", "first")
		api.next(t)
		d := w.next(t)
		require.Equal(t, "failed", d.outcome.Result)
		require.Equal(t, http.StatusInternalServerError, d.outcome.Status)
		require.True(t, d.outcome.BackoffUntil.After(time.Now()), "carol's Pushover is backed off")
		w.post(t, w.ada, "/api/dms/"+dm+"/messages", "second")
		require.Equal(t, persist.PushDropBackoff, w.next(t).outcome.Dropped)
		api.requireNothing(t)
	})

	t.Run("ThroughTheAddressPolicy", func(t *testing.T) {
		t.Parallel()
		api := newFakePushover(t)
		w, carol := pushoverWorld(t, api, func(c *push.Config) { c.Policy = outbound.PublicOnly })
		dm := w.dm(t, w.ada, carol)
		w.post(t, w.ada, "/api/dms/"+dm+"/messages", "to a loopback API")
		d := w.next(t)
		require.True(t, d.push.Pushover)
		require.Equal(t, "failed", d.outcome.Result, "the API on a loopback address is refused")
		require.Zero(t, d.outcome.Status)
		api.requireNothing(t)
	})

	t.Run("OffWithoutAnApplicationToken", func(t *testing.T) {
		t.Parallel()
		api := newFakePushover(t)
		w := newPushWorld(t, func(c *push.Config) { c.PushoverAPI = api.srv.URL + "/1/messages.json" })
		carol := w.person(t, "Carol Shaw", "carol")
		persisttest.Member(t, w.h.Store, w.ws.ID, carol.User.ID, persist.RoleMember)
		setPushover(t, w, carol, true)
		w.post(t, w.ada, "/api/dms/"+w.dm(t, w.ada, carol)+"/messages", "not through Pushover")
		marker := w.post(t, w.ada, "/api/dms/"+w.dm(t, w.ada, w.bob)+"/messages", "to bob's phone")
		d := w.next(t)
		require.Equal(t, marker, d.push.MessageID, "carol's message queued nothing")
		require.False(t, d.push.Pushover)
		api.requireNothing(t)
	})
}
