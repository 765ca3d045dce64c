package push_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/push"
	"github.com/natterchat/natter/realtime/push/pushtest"
)

// pushDone is one push's outcome, reported by the deliverer.
type pushDone struct {
	push    push.Push
	outcome push.Outcome
}

// pushWorld is a workspace whose people have devices at a fake push service, with the
// deliverer running one worker (so pushes leave in the order they were queued) and a gate that
// holds each push just before its re-check while gated.
type pushWorld struct {
	h       *servertest.Harness
	svc     *pushtest.Service
	done    chan pushDone
	gate    chan push.Push
	release chan struct{}
	gated   atomic.Bool

	ada, bob servertest.Actor // ada posts; bob (handle @bob) receives
	ws       persist.Workspace
	general  persist.Channel
	bobPhone *pushtest.Device
}

func newPushWorld(t *testing.T, edit func(*push.Config), opts ...servertest.Option) *pushWorld {
	t.Helper()
	w := &pushWorld{svc: pushtest.New(t), done: make(chan pushDone, 1024), gate: make(chan push.Push),
		release: make(chan struct{})}
	w.h = servertest.New(t, append(opts, servertest.WithWebPush(func(c *push.Config) {
		c.RootCAs = w.svc.RootCAs
		c.Workers = 1
		c.OnDone = func(p push.Push, o push.Outcome) { w.done <- pushDone{p, o} }
		c.BeforeSend = func(p push.Push) {
			if w.gated.Load() {
				w.gate <- p
				<-w.release
			}
		}
		if edit != nil {
			edit(c)
		}
	}))...)
	w.ada = w.person(t, "Ada Lovelace", "ada")
	w.bob = w.person(t, "Bob Builder", "bob")
	w.ws = persisttest.Workspace(t, w.h.Store, w.ada.User.ID)
	persisttest.Member(t, w.h.Store, w.ws.ID, w.bob.User.ID, persist.RoleMember)
	w.general = persisttest.Channel(t, w.h.Store, persist.ActorFor(w.ada.User), w.ws.ID, "general")
	w.bobPhone = w.subscribe(t, w.bob)
	return w
}

// person makes a signed-in human with a display name and handle.
func (w *pushWorld) person(t *testing.T, name, handle string) servertest.Actor {
	u := persisttest.User(t, w.h.Store, &persisttest.UserOpts{DisplayName: &name, Handle: &handle})
	return servertest.Actor{User: u, Token: persisttest.Session(t, w.h.Store, u.ID)}
}

// subscribe registers a new device of a at the fake service.
func (w *pushWorld) subscribe(t *testing.T, a servertest.Actor) *pushtest.Device {
	d := w.svc.NewDevice(t)
	register(t, w.h.Store, a, d, "phone")
	return d
}

// register registers d for a through persist, under a's session, as the registration route
// does.
func register(t *testing.T, store *persist.Store, a servertest.Actor, d *pushtest.Device, label string) {
	t.Helper()
	pushtest.Register(t, store, a.User.ID, sessionOf(t, store, a), d, label)
}

// sessionOf is the id of a's session.
func sessionOf(t *testing.T, store *persist.Store, a servertest.Actor) string {
	t.Helper()
	s, err := persist.ReadV(t.Context(), store, func(tx *persist.Reader) (persist.Session, error) {
		s, _, err := tx.SessionResolve(t.Context(), a.Token)
		return s, err
	})
	require.NoError(t, err)
	return s.ID
}

// unregister removes a's registration of d through persist.
func (w *pushWorld) unregister(t *testing.T, a servertest.Actor, d *pushtest.Device) {
	t.Helper()
	session := sessionOf(t, w.h.Store, a)
	removed, err := persist.WithTxV(t.Context(), w.h.Store, func(tx *persist.Tx) (bool, error) {
		return tx.PushDeviceRemove(t.Context(), persist.PushRegistrant{UserID: a.User.ID, SessionID: session},
			persist.PushRegistration{UserID: a.User.ID, Subscription: persist.PushSubscription{Endpoint: d.Endpoint}})
	})
	require.NoError(t, err)
	require.True(t, removed)
}

// status is a's push status, digest naming the device asked about.
func (w *pushWorld) status(t *testing.T, a servertest.Actor, digest string) persist.PushStatus {
	t.Helper()
	st, err := persist.WithTxV(t.Context(), w.h.Store, func(tx *persist.Tx) (persist.PushStatus, error) {
		return tx.PushStatusGet(t.Context(), a.User.ID, digest, false)
	})
	require.NoError(t, err)
	return st
}

// post posts body to a channel or DM path as a and returns the message id.
func (w *pushWorld) post(t *testing.T, a servertest.Actor, path, body string) string {
	t.Helper()
	r := w.h.Post(t, path, a.Token, map[string]any{"body": body})
	r.RequireStatus(t, http.StatusCreated)
	return r.JSON(t)["message"].(map[string]any)["id"].(string)
}

func (w *pushWorld) inGeneral(t *testing.T, body string) string {
	t.Helper()
	return w.post(t, w.ada, "/api/channels/"+w.general.ID+"/messages", body)
}

// dm opens the direct conversation of a and b.
func (w *pushWorld) dm(t *testing.T, a, b servertest.Actor) string {
	t.Helper()
	r := w.h.Post(t, "/api/dms", a.Token, map[string]any{"workspace_id": w.ws.ID, "member_ids": []string{b.User.ID}})
	require.Contains(t, []int{http.StatusOK, http.StatusCreated}, r.Status, "%s", r.Body)
	return r.JSON(t)["conversation"].(map[string]any)["id"].(string)
}

func (w *pushWorld) setLevel(t *testing.T, a servertest.Actor, level string) {
	t.Helper()
	w.h.Do(t, servertest.Request{Method: http.MethodPut, Path: "/api/channels/" + w.general.ID + "/notification-preference",
		Token: a.Token, Body: map[string]any{"level": level}}).RequireStatus(t, http.StatusOK)
}

// next waits for the next outcome.
func (w *pushWorld) next(t *testing.T) pushDone {
	t.Helper()
	select {
	case d := <-w.done:
		return d
	case <-time.After(10 * time.Second):
		t.Fatalf("no push outcome")
		return pushDone{}
	}
}

// held waits for the gate to hold the next push.
func (w *pushWorld) held(t *testing.T) push.Push {
	t.Helper()
	select {
	case p := <-w.gate:
		return p
	case <-time.After(10 * time.Second):
		t.Fatalf("no push reached the gate")
		return push.Push{}
	}
}

// requireNothingSent checks that the fake service received no push.
func (w *pushWorld) requireNothingSent(t *testing.T) {
	t.Helper()
	select {
	case r := <-w.svc.Received:
		t.Fatalf("unexpected push to %s: %+v", r.Path, r.Payload)
	default:
	}
}
