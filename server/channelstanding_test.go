package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestChannelStandingReachesOnlyOnesOwnSockets: joining, leaving, starring and muting a channel
// send channel.standing_updated to the person's own sockets (their other tabs), with the channel
// as their list shows it, and to no one else; clients cannot send it.
func TestChannelStandingReachesOnlyOnesOwnSockets(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t)
	random := persisttest.Channel(t, b.h.Store, persist.ActorFor(b.owner.User), b.ws.ID, "random").ID
	var tail struct {
		TailCursor string `json:"tail_cursor"`
	}
	b.h.Get(t, "/api/realtime/events?include_tail=true&workspace_id="+b.ws.ID, b.owner.Token).Decode(t, &tail)
	tabA, tabB := b.dial(t, b.owner.Token, tail.TailCursor), b.dial(t, b.owner.Token, tail.TailCursor)
	other := b.dial(t, b.member.Token, tail.TailCursor)

	type standing struct {
		UserID  string `json:"user_id"`
		Channel struct {
			ID                string `json:"id"`
			Name              string `json:"name"`
			Joined            bool   `json:"joined"`
			Starred           bool   `json:"starred"`
			NotificationLevel string `json:"notification_level"`
		} `json:"channel"`
	}
	expect := func(s *servertest.Socket, joined, starred bool, level string) {
		t.Helper()
		ev := s.Next(t)
		require.Equal(t, "channel.standing_updated", ev.Type)
		require.Equal(t, random, ev.ChannelID)
		require.Empty(t, ev.Cursor, "never stored: no cursor")
		var p standing
		require.NoError(t, json.Unmarshal(ev.Payload, &p))
		require.Equal(t, b.owner.User.ID, p.UserID)
		require.Equal(t, random, p.Channel.ID)
		require.Equal(t, "random", p.Channel.Name)
		require.Equal(t, []any{joined, starred, level}, []any{p.Channel.Joined, p.Channel.Starred, p.Channel.NotificationLevel})
	}
	do := func(method, path string, body any) {
		t.Helper()
		b.h.Do(t, servertest.Request{Method: method, Path: path, Token: b.owner.Token, Body: body}).RequireStatus(t, http.StatusOK)
	}
	do(http.MethodPut, "/api/channels/"+random+"/star", nil)
	do(http.MethodPut, "/api/channels/"+random+"/notification-preference", map[string]any{"level": "muted"})
	do(http.MethodPost, "/api/channels/"+random+"/leave", nil)
	do(http.MethodPost, "/api/channels/"+random+"/join", nil)
	for _, tab := range []*servertest.Socket{tabA, tabB} {
		expect(tab, true, true, "mentions")
		expect(tab, true, true, "muted")
		expect(tab, false, false, "muted") // leaving drops the star
		expect(tab, true, false, "muted")
	}
	// Someone else hears none of it: their next event is the message after.
	b.h.Post(t, "/api/channels/"+b.general+"/messages", b.owner.Token, map[string]any{"body": "after"}).RequireStatus(t, http.StatusCreated)
	require.Equal(t, "message.created", other.Next(t).Type)
	require.Equal(t, "message.created", tabA.Next(t).Type)

	b.h.Post(t, "/api/realtime/ephemeral", b.owner.Token, map[string]any{"channel_id": random, "type": "channel.standing_updated",
		"payload": map[string]any{"channel": map[string]any{"id": random, "starred": true}}}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
}
