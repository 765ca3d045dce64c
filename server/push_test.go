package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/push"
	"github.com/natterchat/natter/realtime/push/pushtest"
	"github.com/natterchat/natter/server"
)

func TestPushDisabled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []servertest.Option
	}{
		{"NoKeyPair", nil},
		{"TurnedOff", []servertest.Option{servertest.WithWebPush(nil), servertest.WithConfig(func(c *server.Config) { c.DisableWebPush = true })}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := servertest.New(t, tc.opts...)
			svc := pushtest.New(t)
			a := h.NewUser(t)
			st := getPushStatus(t, h, a.Token, "")
			require.False(t, st.Enabled)
			require.Empty(t, st.PublicKey)
			require.Empty(t, st.Devices)
			pushSubscribe(t, h, a, svc.NewDevice(t), "Firefox").RequireError(t, http.StatusNotFound, persist.CodePushDisabled)
			pushUnsubscribe(t, h, a.Token, a.User.ID, "https://push.example.com/x").RequireError(t, http.StatusNotFound, persist.CodePushDisabled)
		})
	}
}

func TestPushRegister(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*servertest.Harness, *pushtest.Service, servertest.Actor) {
		h := servertest.New(t, servertest.WithWebPush(nil))
		return h, pushtest.New(t), h.NewUser(t)
	}

	t.Run("RegistersAndNeverShowsTheSubscription", func(t *testing.T) {
		t.Parallel()
		h, svc, a := setup(t)
		d := svc.NewDevice(t)
		r := pushSubscribe(t, h, a, d, "Firefox on Linux")
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, "Firefox on Linux", r.JSON(t)["device"].(map[string]any)["label"])
		raw := h.Get(t, "/api/me/push?device="+d.Digest, a.Token)
		for _, secret := range []string{d.Endpoint, d.P256dh, d.Auth, strings.TrimPrefix(d.Endpoint, svc.URL)} {
			require.NotContains(t, string(raw.Body)+string(r.Body), secret)
		}
		st := getPushStatus(t, h, a.Token, d.Digest)
		require.True(t, st.Enabled)
		require.NotEmpty(t, st.PublicKey)
		require.True(t, st.ThisDevice)
		require.False(t, st.ThisDeviceStale)
		require.Len(t, st.Devices, 1)
		require.True(t, st.Devices[0].ThisDevice)
		require.Zero(t, st.Devices[0].FailureCount)
		other := getPushStatus(t, h, a.Token, svc.NewDevice(t).Digest)
		require.False(t, other.ThisDevice, "a digest that names none of the caller's devices")
		require.False(t, getPushStatus(t, h, h.NewUser(t).Token, d.Digest).ThisDevice, "another account's device")
	})

	t.Run("Validation", func(t *testing.T) {
		t.Parallel()
		h, svc, a := setup(t)
		d := svc.NewDevice(t)
		for name, mutate := range map[string]func(map[string]any){
			"PlainHTTP":   func(b map[string]any) { b["endpoint"] = strings.Replace(d.Endpoint, "https:", "http:", 1) },
			"PrivateHost": func(b map[string]any) { b["endpoint"] = "https://10.1.2.3/push/x" },
			"InternalName": func(b map[string]any) {
				b["endpoint"] = "https://push.svc.cluster.internal/x"
			},
			"KeyNotAPoint": func(b map[string]any) { b["keys"] = map[string]any{"p256dh": strings.Repeat("A", 87), "auth": d.Auth} },
			"AuthNot16":    func(b map[string]any) { b["keys"] = map[string]any{"p256dh": d.P256dh, "auth": "AAAA"} },
			"NoEndpoint":   func(b map[string]any) { delete(b, "endpoint") },
		} {
			body := d.Subscription()
			body["user_id"] = a.User.ID
			mutate(body)
			r := h.Do(t, servertest.Request{Method: http.MethodPut, Path: "/api/me/push/subscriptions", Token: a.Token, Body: body})
			require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", name, r.Body)
		}
		require.Empty(t, getPushStatus(t, h, a.Token, "").Devices)
		// The subscription may also come wrapped, as the browser's object.
		r := h.Do(t, servertest.Request{Method: http.MethodPut, Path: "/api/me/push/subscriptions", Token: a.Token,
			Body: map[string]any{"subscription": d.Subscription(), "user_id": a.User.ID}})
		r.RequireStatus(t, http.StatusOK)
	})

	t.Run("AnotherAccountIsAConflictAndWritesNothing", func(t *testing.T) {
		t.Parallel()
		h, svc, a := setup(t)
		b := h.NewUser(t)
		d := svc.NewDevice(t)
		body := d.Subscription()
		body["user_id"] = b.User.ID
		h.Do(t, servertest.Request{Method: http.MethodPut, Path: "/api/me/push/subscriptions", Token: a.Token, Body: body}).
			RequireError(t, http.StatusConflict, persist.CodePushAccountMismatch)
		body["keys"] = "not even keys" // the account is checked before the subscription
		r := h.Do(t, servertest.Request{Method: http.MethodPut, Path: "/api/me/push/subscriptions", Token: a.Token, Body: body})
		require.Equal(t, http.StatusBadRequest, r.Status, "a body that is not the shape at all is refused as JSON")
		delete(body, "keys")
		h.Do(t, servertest.Request{Method: http.MethodPut, Path: "/api/me/push/subscriptions", Token: a.Token, Body: body}).
			RequireError(t, http.StatusConflict, persist.CodePushAccountMismatch)
		require.Empty(t, getPushStatus(t, h, a.Token, "").Devices)
		require.Empty(t, getPushStatus(t, h, b.Token, "").Devices)
		pushSubscribe(t, h, a, d, "x").RequireStatus(t, http.StatusOK)
		pushUnsubscribe(t, h, a.Token, b.User.ID, d.Endpoint).RequireError(t, http.StatusConflict, persist.CodePushAccountMismatch)
		require.Len(t, getPushStatus(t, h, a.Token, "").Devices, 1, "the mismatched removal removed nothing")
	})

	t.Run("NeedsASessionOrTheDevelopmentIdentity", func(t *testing.T) {
		t.Parallel()
		h, svc, a := setup(t)
		ws := persisttest.Workspace(t, h.Store, a.User.ID)
		_, tok := persisttest.Bot(t, h.Store, a.User, ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:admin"}})
		d := svc.NewDevice(t)
		body := d.Subscription()
		body["user_id"] = a.User.ID
		r := h.Do(t, servertest.Request{Method: http.MethodPut, Path: "/api/me/push/subscriptions", Token: tok.Token, Body: body})
		require.Equal(t, http.StatusForbidden, r.Status, "%s", r.Body)
		// The loopback development identity has no session and may register.
		r = h.Do(t, servertest.Request{Method: http.MethodPut, Path: "/api/me/push/subscriptions",
			Header: map[string]string{"X-Natter-User": a.User.ID}, Body: body})
		r.RequireStatus(t, http.StatusOK)
		require.True(t, getPushStatus(t, h, a.Token, d.Digest).ThisDevice)
	})

	t.Run("SameEndpointReplaces", func(t *testing.T) {
		t.Parallel()
		h, svc, a := setup(t)
		d := svc.NewDevice(t)
		pushSubscribe(t, h, a, d, "old label").RequireStatus(t, http.StatusOK)
		pushSubscribe(t, h, a, d, "new label").RequireStatus(t, http.StatusOK)
		st := getPushStatus(t, h, a.Token, d.Digest)
		require.Len(t, st.Devices, 1)
		require.Equal(t, "new label", st.Devices[0].Label)
		// The same browser signed in as someone else takes the registration over.
		b := h.NewUser(t)
		pushSubscribe(t, h, b, d, "b's").RequireStatus(t, http.StatusOK)
		require.Empty(t, getPushStatus(t, h, a.Token, "").Devices)
		require.True(t, getPushStatus(t, h, b.Token, d.Digest).ThisDevice)
	})

	t.Run("TenDevicesTheEleventhDropsTheOldest", func(t *testing.T) {
		t.Parallel()
		h, svc, a := setup(t)
		var devices []*pushtest.Device
		for i := range 11 { // SPEC §Limits: 10 push devices; an eleventh drops the oldest
			d := svc.NewDevice(t)
			devices = append(devices, d)
			pushSubscribe(t, h, a, d, fmt.Sprintf("device %d", i)).RequireStatus(t, http.StatusOK)
		}
		st := getPushStatus(t, h, a.Token, devices[0].Digest)
		require.Len(t, st.Devices, 10)
		require.False(t, st.ThisDevice, "the first registration was dropped")
		require.True(t, getPushStatus(t, h, a.Token, devices[1].Digest).ThisDevice)
		require.True(t, getPushStatus(t, h, a.Token, devices[10].Digest).ThisDevice)
	})

	t.Run("RemoveIsIdempotent", func(t *testing.T) {
		t.Parallel()
		h, svc, a := setup(t)
		d := svc.NewDevice(t)
		pushSubscribe(t, h, a, d, "x").RequireStatus(t, http.StatusOK)
		r := pushUnsubscribe(t, h, a.Token, a.User.ID, d.Endpoint)
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, true, r.JSON(t)["removed"])
		r = pushUnsubscribe(t, h, a.Token, a.User.ID, d.Endpoint)
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, false, r.JSON(t)["removed"])
		require.Empty(t, getPushStatus(t, h, a.Token, "").Devices)
	})

	t.Run("KeyRotationMakesRegistrationsStale", func(t *testing.T) {
		t.Parallel()
		h, svc, a := setup(t)
		d := svc.NewDevice(t)
		pushSubscribe(t, h, a, d, "x").RequireStatus(t, http.StatusOK)
		before := getPushStatus(t, h, a.Token, d.Digest)
		_, retired, err := push.RotateKey(context.Background(), h.Store)
		require.NoError(t, err)
		require.NotEmpty(t, retired)
		after := getPushStatus(t, h, a.Token, d.Digest)
		require.NotEqual(t, before.PublicKey, after.PublicKey)
		require.True(t, after.ThisDevice)
		require.True(t, after.ThisDeviceStale, "registered under the retired key: register again")
		pushSubscribe(t, h, a, d, "x").RequireStatus(t, http.StatusOK)
		require.False(t, getPushStatus(t, h, a.Token, d.Digest).ThisDeviceStale)
	})
}

func TestNotificationPreference(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	owner, member, guest, outsider := h.NewUser(t), h.NewUser(t), h.NewUser(t), h.NewUser(t)
	ws := persisttest.Workspace(t, h.Store, owner.User.ID)
	persisttest.Member(t, h.Store, ws.ID, member.User.ID, persist.RoleMember)
	persisttest.Member(t, h.Store, ws.ID, guest.User.ID, persist.RoleGuest)
	ch := persisttest.Channel(t, h.Store, persist.ActorFor(owner.User), ws.ID, "general")
	path := "/api/channels/" + ch.ID + "/notification-preference"
	put := func(token string, body any) *servertest.Response {
		return h.Do(t, servertest.Request{Method: http.MethodPut, Path: path, Token: token, Body: body})
	}
	pref := func(r *servertest.Response) map[string]any {
		r.RequireStatus(t, http.StatusOK)
		return r.JSON(t)["notification_preference"].(map[string]any)
	}
	got := pref(h.Get(t, path, member.Token))
	require.Equal(t, "mentions", got["level"], "channels default to mentions only")
	require.NotContains(t, got, "updated_at")
	require.Equal(t, "all", pref(put(member.Token, map[string]any{"level": "all"}))["level"])
	require.Equal(t, "all", pref(h.Get(t, path, member.Token))["level"])
	require.Equal(t, "mentions", pref(h.Get(t, path, owner.Token))["level"], "the preference is per member")
	require.Equal(t, "muted", pref(put(member.Token, map[string]any{"level": "muted"}))["level"])
	put(member.Token, map[string]any{"level": "loud"}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	put(guest.Token, map[string]any{"level": "all"}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	put(outsider.Token, map[string]any{"level": "all"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	_, tok := persisttest.Bot(t, h.Store, owner.User, ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:admin"}})
	put(tok.Token, map[string]any{"level": "all"}).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
}
