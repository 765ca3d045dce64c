package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
)

func TestMe(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	patch := func(token string, body any) *servertest.Response {
		return h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: token, Body: body})
	}

	t.Run("GetShowsPrivateFieldsToTheCaller", func(t *testing.T) {
		t.Parallel()
		me := h.NewUser(t)
		u := h.Get(t, "/api/me", me.Token).JSON(t)["user"].(map[string]any)
		require.Equal(t, "human", u["kind"])
		require.Equal(t, false, u["password_enrolled"])
		require.Contains(t, u, "notification_settings")
		require.NotContains(t, u, "owner_user_id", "humans carry no owner")
		require.Contains(t, u["avatar_url"], "gravatar.com/avatar/", "email-derived fallback")
	})

	t.Run("PatchSubsetKeepsTheRest", func(t *testing.T) {
		t.Parallel()
		me := h.NewUser(t)
		r := patch(me.Token, map[string]any{"handle": "@MixedCase"})
		r.RequireStatus(t, http.StatusOK)
		u := r.JSON(t)["user"].(map[string]any)
		require.Equal(t, "mixedcase", u["handle"])
		require.Equal(t, me.User.DisplayName, u["display_name"])

		r = patch(me.Token, map[string]any{"display_name": "  New Name  ", "avatar_url": "https://img.example/me.png",
			"notification_settings": map[string]any{"pushover_enabled": true, "pushover_user_key": "abcdefghijABCDEFGHIJ0123456789"}})
		r.RequireStatus(t, http.StatusOK)
		u = r.JSON(t)["user"].(map[string]any)
		require.Equal(t, "New Name", u["display_name"])
		require.Equal(t, "mixedcase", u["handle"])
		require.Equal(t, "https://img.example/me.png", u["avatar_url"])
		require.Equal(t, map[string]any{"pushover_enabled": true, "pushover_user_key": "abcdefghijABCDEFGHIJ0123456789",
			"email_enabled": true, "email_delay": "2m"}, u["notification_settings"])

		u = patch(me.Token, map[string]any{"avatar_url": ""}).JSON(t)["user"].(map[string]any)
		require.Contains(t, u["avatar_url"], "gravatar.com/avatar/", "clearing restores the fallback")
	})

	t.Run("InvalidFieldsAre400AndChangeNothing", func(t *testing.T) {
		t.Parallel()
		me := h.NewUser(t)
		for _, body := range []map[string]any{
			{"handle": "x"},
			{"handle": "no spaces"},
			{"handle": "@" + "abcdefghijabcdefghijabcdefghijabc"},
			{"avatar_url": "ftp://example.com/a.png"},
			{"display_name": ""},
			{"notification_settings": map[string]any{"pushover_user_key": "tooshort"}},
			{"display_name": "Valid", "handle": "!!"},
		} {
			patch(me.Token, body).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
		u := h.Get(t, "/api/me", me.Token).JSON(t)["user"].(map[string]any)
		require.Equal(t, me.User.DisplayName, u["display_name"])
		require.NotContains(t, u, "handle")
	})

	t.Run("TakenHandleIs409", func(t *testing.T) {
		t.Parallel()
		a, b := h.NewUser(t), h.NewUser(t)
		patch(a.Token, map[string]any{"handle": "samehandle"}).RequireStatus(t, http.StatusOK)
		patch(b.Token, map[string]any{"handle": "SameHandle"}).RequireError(t, http.StatusConflict, persist.CodeConflict)
	})
}
