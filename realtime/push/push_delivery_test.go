package push_test

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/push"
)

func TestPushDelivery(t *testing.T) {
	t.Parallel()

	t.Run("DirectMessage", func(t *testing.T) {
		t.Parallel()
		w := newPushWorld(t, nil)
		adaPhone := w.subscribe(t, w.ada)
		dm := w.dm(t, w.ada, w.bob)
		id := w.post(t, w.ada, "/api/dms/"+dm+"/messages", "lunch?")
		got := w.svc.Next(t)
		require.Equal(t, push.Payload{UserID: w.bob.User.ID, Title: "Ada Lovelace", Body: "lunch?", Tag: id,
			URL: "/" + w.ws.RouteID + "/" + persist.RouteID("D", dm)}, got.Payload)
		require.Equal(t, w.status(t, w.bob, "").PublicKey, got.VAPIDKey, "signed with the current key")
		require.Equal(t, "delivered", w.next(t).outcome.Result)
		st := w.status(t, w.bob, w.bobPhone.Digest)
		require.NotEmpty(t, st.Devices[0].LastSuccessAt)

		// Never the author: bob's answer is the next push, and it goes to ada.
		reply := w.post(t, w.bob, "/api/dms/"+dm+"/messages", "yes")
		got = w.svc.Next(t)
		require.Equal(t, reply, got.Payload.Tag)
		require.Equal(t, w.ada.User.ID, got.Payload.UserID)
		require.True(t, strings.HasSuffix(adaPhone.Endpoint, got.Path))
	})

	t.Run("ChannelPreferencesAndMentions", func(t *testing.T) {
		t.Parallel()
		w := newPushWorld(t, nil)
		w.inGeneral(t, "morning all")              // bob is at the default, mentions only
		id := w.inGeneral(t, "@bob can you look?") // this one
		got := w.svc.Next(t)
		require.Equal(t, id, got.Payload.Tag)
		require.Equal(t, "Ada Lovelace in #general", got.Payload.Title)
		require.Equal(t, "/"+w.ws.RouteID+"/"+w.general.RouteID, got.Payload.URL)

		w.setLevel(t, w.bob, persist.NotifyAll)
		id = w.inGeneral(t, "plain message")
		require.Equal(t, id, w.svc.Next(t).Payload.Tag)

		w.setLevel(t, w.bob, persist.NotifyMuted)
		w.inGeneral(t, "@bob muted anyway")
		// Events are handled in cursor order, so a direct message after it is the next push.
		marker := w.post(t, w.ada, "/api/dms/"+w.dm(t, w.ada, w.bob)+"/messages", "direct conversations always notify")
		require.Equal(t, marker, w.svc.Next(t).Payload.Tag, "nothing was sent while muted")
		w.setLevel(t, w.bob, persist.NotifyAll)

		// Thread replies follow the same rules and link to the thread.
		reply := w.h.Post(t, "/api/messages/"+id+"/thread/replies", w.ada.Token, map[string]any{"body": "a reply"})
		reply.RequireStatus(t, http.StatusCreated)
		got = w.svc.Next(t)
		require.Equal(t, reply.JSON(t)["message"].(map[string]any)["id"], got.Payload.Tag)
		require.Equal(t, "/"+w.ws.RouteID+"/"+persist.RouteID("M", id), got.Payload.URL)
	})

	t.Run("LeftChannelNotifiesNothing", func(t *testing.T) {
		t.Parallel()
		w := newPushWorld(t, nil)
		r := w.h.Post(t, "/api/workspaces/"+w.ws.ID+"/channels", w.ada.Token, map[string]any{"name": "random"})
		r.RequireStatus(t, http.StatusCreated)
		random := r.JSON(t)["channel"].(map[string]any)["id"].(string)
		w.h.Post(t, "/api/channels/"+random+"/leave", w.bob.Token, nil).RequireStatus(t, http.StatusOK)
		w.post(t, w.ada, "/api/channels/"+random+"/messages", "@bob you left, but")
		marker := w.post(t, w.ada, "/api/dms/"+w.dm(t, w.ada, w.bob)+"/messages", "direct conversations always notify")
		require.Equal(t, marker, w.svc.Next(t).Payload.Tag, "nothing was sent about the channel Bob left")

		w.h.Post(t, "/api/channels/"+random+"/join", w.bob.Token, nil).RequireStatus(t, http.StatusOK)
		id := w.post(t, w.ada, "/api/channels/"+random+"/messages", "@bob welcome back")
		require.Equal(t, id, w.svc.Next(t).Payload.Tag)
	})

	t.Run("GuestsOnlyHearOfWhatTheyCanRead", func(t *testing.T) {
		t.Parallel()
		w := newPushWorld(t, nil)
		gus := w.person(t, "Gus", "gus")
		persisttest.Member(t, w.h.Store, w.ws.ID, gus.User.ID, persist.RoleGuest)
		w.subscribe(t, gus)
		guestRoom := persisttest.Channel(t, w.h.Store, persist.ActorFor(w.ada.User), w.ws.ID, persist.GuestChannel)
		w.inGeneral(t, "@gus this is not for you")
		id := w.post(t, w.ada, "/api/channels/"+guestRoom.ID+"/messages", "@gus welcome")
		got := w.svc.Next(t)
		require.Equal(t, id, got.Payload.Tag)
		require.Equal(t, gus.User.ID, got.Payload.UserID)
	})

	t.Run("TitleWhenQueuedBodyWhenSent", func(t *testing.T) {
		t.Parallel()
		w := newPushWorld(t, nil)
		w.gated.Store(true)
		dm := w.dm(t, w.ada, w.bob)
		id := w.post(t, w.ada, "/api/dms/"+dm+"/messages", "first draft")
		held := w.held(t)
		require.Equal(t, "Ada Lovelace", held.Title)
		w.h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: w.ada.Token,
			Body: map[string]any{"display_name": "Ada King"}}).RequireStatus(t, http.StatusOK)
		long := strings.Repeat("ü", 300)
		w.h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/messages/" + id, Token: w.ada.Token,
			Body: map[string]any{"body": long}}).RequireStatus(t, http.StatusOK)
		w.release <- struct{}{}
		got := w.svc.Next(t)
		require.Equal(t, "Ada Lovelace", got.Payload.Title, "the title is fixed when queued")
		require.Equal(t, 240, utf8.RuneCountInString(got.Payload.Body), "SPEC §Limits: the body as it reads now, cut to 240")
		require.True(t, strings.HasPrefix(got.Payload.Body, strings.Repeat("ü", 239)))
	})
}

// TestPushRecheck holds each push just before it is sent, changes the world, and checks that
// the push is dropped for the reason that change gives (and that nothing reaches the service).
func TestPushRecheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		body   string // posted by ada in #general; bob is at the default level (mentions)
		change func(t *testing.T, w *pushWorld, messageID string)
		reason string
	}{
		{"MessageDeleted", "@bob hi", func(t *testing.T, w *pushWorld, id string) {
			w.h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/messages/" + id, Token: w.ada.Token}).
				RequireStatus(t, http.StatusOK)
		}, persist.PushDropMessageDeleted},
		{"SessionSignedOut", "@bob hi", func(t *testing.T, w *pushWorld, _ string) {
			w.h.Post(t, "/api/auth/logout", w.bob.Token, nil).RequireStatus(t, http.StatusOK)
		}, persist.PushDropSessionEnded},
		{"KeyRotated", "@bob hi", func(t *testing.T, w *pushWorld, _ string) {
			_, _, err := push.RotateKey(t.Context(), w.h.Store)
			require.NoError(t, err)
		}, persist.PushDropKeyRetired},
		{"DeviceRemoved", "@bob hi", func(t *testing.T, w *pushWorld, _ string) {
			w.unregister(t, w.bob, w.bobPhone)
		}, persist.PushDropDeviceGone},
		{"DeviceMovedToAnotherAccount", "@bob hi", func(t *testing.T, w *pushWorld, _ string) {
			carol := w.person(t, "Carol", "carol")
			register(t, w.h.Store, carol, w.bobPhone, "shared browser")
		}, persist.PushDropDeviceGone},
		{"NoLongerReadable", "@bob hi", func(t *testing.T, w *pushWorld, _ string) {
			w.h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/workspaces/" + w.ws.ID + "/moderation/members/" + w.bob.User.ID,
				Token: w.ada.Token, Body: map[string]any{"role": "guest"}}).RequireStatus(t, http.StatusOK)
		}, persist.PushDropNotReadable},
		{"MentionEditedOut", "@bob hi", func(t *testing.T, w *pushWorld, id string) {
			w.h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/messages/" + id, Token: w.ada.Token,
				Body: map[string]any{"body": "hi everyone"}}).RequireStatus(t, http.StatusOK)
		}, persist.PushDropNotSelected},
		{"HandleChanged", "@bob hi", func(t *testing.T, w *pushWorld, _ string) {
			w.h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: w.bob.Token,
				Body: map[string]any{"handle": "robert"}}).RequireStatus(t, http.StatusOK)
		}, persist.PushDropNotSelected},
		{"Muted", "@bob hi", func(t *testing.T, w *pushWorld, _ string) {
			w.setLevel(t, w.bob, persist.NotifyMuted)
		}, persist.PushDropNotSelected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newPushWorld(t, nil)
			w.gated.Store(true)
			id := w.inGeneral(t, tc.body)
			held := w.held(t)
			require.Equal(t, id, held.MessageID)
			tc.change(t, w, id)
			w.release <- struct{}{}
			done := w.next(t)
			require.Equal(t, tc.reason, done.outcome.Dropped)
			w.requireNothingSent(t)
		})
	}
}
