package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/realtime"
)

// TestTimeZone: a person sets their IANA time zone through PATCH /api/me; the member directory
// and the profile card's route show it to the workspace; anything the zone database does not
// know is refused and changes nothing; an empty value clears it.
func TestTimeZone(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t)
	patch := func(tz any) *servertest.Response {
		return b.h.Do(t, servertest.Request{Method: "PATCH", Path: "/api/me", Token: b.member.Token, Body: map[string]any{"time_zone": tz}})
	}
	card := func() map[string]any {
		r := b.h.Get(t, "/api/workspaces/"+b.ws.ID+"/members/"+b.member.User.ID, b.owner.Token)
		r.RequireStatus(t, http.StatusOK)
		return r.JSON(t)["member"].(map[string]any)
	}
	r := patch(" America/New_York ")
	r.RequireStatus(t, http.StatusOK)
	require.Equal(t, "America/New_York", r.JSON(t)["user"].(map[string]any)["time_zone"])
	m := card()
	require.Equal(t, "member", m["role"])
	require.Equal(t, "America/New_York", m["user"].(map[string]any)["time_zone"])
	require.Equal(t, b.member.User.ID, m["user"].(map[string]any)["id"])

	for _, bad := range []any{"Mars/Olympus_Mons", "Local", "../../etc/passwd", "America/New_York\x00", string(make([]byte, 65))} {
		patch(bad).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	}
	patch(42).RequireError(t, http.StatusBadRequest, persist.CodeInvalidJSON)
	require.Equal(t, "America/New_York", card()["user"].(map[string]any)["time_zone"], "refusals change nothing")
	patch("").RequireStatus(t, http.StatusOK)
	require.NotContains(t, card()["user"], "time_zone")

	// The card's route: members only, and only for a member.
	outsider := b.h.NewUser(t)
	r = b.h.Get(t, "/api/workspaces/"+b.ws.ID+"/members/"+b.member.User.ID, outsider.Token)
	require.Contains(t, []int{http.StatusForbidden, http.StatusNotFound}, r.Status)
	b.h.Get(t, "/api/workspaces/"+b.ws.ID+"/members/"+outsider.User.ID, b.owner.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	b.h.Get(t, "/api/workspaces/"+b.ws.ID+"/members/usr_nobody", b.owner.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
}

// TestPresenceOverHTTP: GET …/presence lists who has a socket open; a socket that asked with
// ?presence=1 receives presence.changed as people come and go, and one that did not (every
// ClickClack client) receives none; a client's own presence.changed still works as before.
func TestPresenceOverHTTP(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t, servertest.WithRealtime(func(c *realtime.Config) {
		c.PresenceTTL, c.PresenceFlush = time.Second, 20*time.Millisecond
	}))
	onlineNow := func(token string) []string {
		r := b.h.Get(t, "/api/workspaces/"+b.ws.ID+"/presence", token)
		r.RequireStatus(t, http.StatusOK)
		var body struct {
			Presence []struct {
				UserID  string `json:"user_id"`
				Online  bool   `json:"online"`
				Version int64  `json:"version"`
			} `json:"presence"`
		}
		r.Decode(t, &body)
		ids := []string{}
		for _, p := range body.Presence {
			require.True(t, p.Online)
			require.Positive(t, p.Version)
			ids = append(ids, p.UserID)
		}
		return ids
	}
	require.Empty(t, onlineNow(b.member.Token))
	w, status := b.h.DialSocket(t, servertest.Dial{Path: b.wsPath("2") + "&presence=1", Token: b.owner.Token})
	require.Equal(t, http.StatusSwitchingProtocols, status)
	expect := func(user string, online bool) {
		t.Helper()
		ev := w.Next(t)
		require.Equal(t, "presence.changed", ev.Type)
		require.Empty(t, ev.ChannelID+ev.DirectConversationID)
		var p map[string]any
		require.NoError(t, json.Unmarshal(ev.Payload, &p))
		require.Equal(t, user, p["user_id"])
		require.Equal(t, online, p["online"])
		require.Equal(t, map[bool]string{true: "online", false: "offline"}[online], p["status"])
	}
	expect(b.owner.User.ID, true)
	plain := b.dial(t, b.member.Token, "2")
	expect(b.member.User.ID, true)
	require.ElementsMatch(t, []string{b.owner.User.ID, b.member.User.ID}, onlineNow(b.member.Token))

	// A guest socket counts too, though guests receive no workspace-wide events.
	guest := b.dial(t, b.guest.Token, "1")
	expect(b.guest.User.ID, true)
	_ = guest.Close()
	expect(b.guest.User.ID, false)

	// The client-sent presence.changed of CONTRACT.md is unchanged, and the plain socket sees
	// it and only it.
	b.h.Post(t, "/api/realtime/ephemeral", b.owner.Token, map[string]any{"channel_id": b.general, "type": "presence.changed",
		"payload": map[string]any{"status": "away"}}).RequireStatus(t, http.StatusAccepted)
	ev := plain.Next(t)
	require.Equal(t, "presence.changed", ev.Type)
	require.Equal(t, b.general, ev.ChannelID)
	require.JSONEq(t, `{"user_id":"`+b.owner.User.ID+`","channel_id":"`+b.general+`","status":"away"}`, string(ev.Payload))
	require.Equal(t, b.general, w.Next(t).ChannelID)

	_ = plain.Close()
	expect(b.member.User.ID, false)
	require.Equal(t, []string{b.owner.User.ID}, onlineNow(b.owner.Token))

	outsider := b.h.NewUser(t)
	r := b.h.Get(t, "/api/workspaces/"+b.ws.ID+"/presence", outsider.Token)
	require.Contains(t, []int{http.StatusForbidden, http.StatusNotFound}, r.Status)
	b.h.Get(t, "/api/workspaces/wsp_nothing/presence", b.owner.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
}
