package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestEventPayloadIDs makes one event of every durable type through the API and reads them back
// by backfill: each payload names the ids SPEC §Events gives its type, besides the envelope
// (CONTRACT.md §Compatibility), and the four message events also name the author, the nonce
// and the request's correlation id.
func TestEventPayloadIDs(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	c := newChat(t, h)
	owner, alice := c.owner, c.alice
	corr := map[string]string{"X-Correlation-ID": "corr-payload-ids"}
	send := func(method, path string, body any) map[string]any {
		t.Helper()
		r := h.Do(t, servertest.Request{Method: method, Path: path, Token: owner.Token, Body: body, Header: corr})
		require.Less(t, r.Status, 300, "%s %s: %s", method, path, r.Body)
		return r.JSON(t)
	}

	channelID := str(t, send(http.MethodPost, "/api/workspaces/"+c.ws.ID+"/channels", map[string]any{"name": "ids"}), "channel", "id")
	send(http.MethodPatch, "/api/channels/"+channelID, map[string]any{"archived": true})
	secret := str(t, send(http.MethodPost, "/api/workspaces/"+c.ws.ID+"/channels", map[string]any{"name": "secret",
		"visibility": "private"}), "channel", "id")
	send(http.MethodPost, "/api/channels/"+secret+"/members", map[string]any{"user_id": c.mod.User.ID})
	send(http.MethodDelete, "/api/channels/"+secret+"/members/"+c.mod.User.ID, nil)
	root := str(t, send(http.MethodPost, channelMessages(c.general.ID), map[string]any{"body": "root", "nonce": "n-root"}), "message", "id")
	reply := str(t, send(http.MethodPost, "/api/messages/"+root+"/thread/replies", map[string]any{"body": "reply", "nonce": "n-reply"}), "message", "id")
	send(http.MethodPatch, "/api/messages/"+root, map[string]any{"body": "root, edited"})
	send(http.MethodPost, "/api/messages/"+root+"/reactions", map[string]any{"emoji": "👀"})
	send(http.MethodDelete, "/api/messages/"+root+"/reactions/👀", nil)
	send(http.MethodPost, "/api/channels/"+c.general.ID+"/pins", map[string]any{"message_id": root})
	send(http.MethodDelete, "/api/channels/"+c.general.ID+"/pins/"+root, nil)
	dm := persisttest.DM(t, h.Store, c.ws.ID, owner.User.ID, alice.User.ID)
	private := str(t, send(http.MethodPost, dmMessages(dm), map[string]any{"body": "psst"}), "message", "id")
	send(http.MethodDelete, "/api/messages/"+reply, nil)
	send(http.MethodPatch, "/api/workspaces/"+c.ws.ID+"/moderation/members/"+alice.User.ID, map[string]any{"timeout_minutes": 5})
	send(http.MethodDelete, "/api/workspaces/"+c.ws.ID+"/members/"+alice.User.ID, nil)
	send(http.MethodPatch, "/api/workspaces/"+c.ws.ID, map[string]any{"name": "Renamed"})
	send(http.MethodPost, "/api/workspaces/"+c.ws.ID+"/transfer-ownership", map[string]any{"user_id": c.mod.User.ID})

	var events []map[string]any
	r := h.Get(t, "/api/realtime/events?workspace_id="+c.ws.ID+"&limit=500", owner.Token)
	r.RequireStatus(t, http.StatusOK)
	for _, e := range list(t, r.JSON(t), "events") {
		events = append(events, e.(map[string]any))
	}
	// first finds the first event of typ whose payload has key equal to value.
	first := func(typ, key, value string) map[string]any {
		t.Helper()
		for _, e := range events {
			if e["type"] == typ && field(t, e, "payload").(map[string]any)[key] == value {
				return field(t, e, "payload").(map[string]any)
			}
		}
		t.Fatalf("no %s event with payload.%s = %s", typ, key, value)
		return nil
	}
	type want map[string]any
	for _, tc := range []struct {
		typ, key, value string // which event
		want            want   // fields its payload must hold
	}{
		{"channel.created", "channel_id", channelID, want{"channel_id": channelID}},
		{"channel.updated", "channel_id", channelID, want{"channel_id": channelID, "archived": true}},
		{"message.created", "message_id", root, want{"message_id": root, "author_id": owner.User.ID, "channel_id": c.general.ID,
			"nonce": "n-root", "correlation_id": "corr-payload-ids"}},
		{"message.created", "message_id", private, want{"message_id": private, "author_id": owner.User.ID,
			"direct_conversation_id": dm, "correlation_id": "corr-payload-ids"}},
		{"thread.reply_created", "message_id", reply, want{"message_id": reply, "author_id": owner.User.ID,
			"channel_id": c.general.ID, "nonce": "n-reply", "correlation_id": "corr-payload-ids"}},
		{"thread.state_updated", "root_message_id", root, want{"root_message_id": root, "message_id": root, "channel_id": c.general.ID}},
		{"message.updated", "message_id", root, want{"message_id": root, "author_id": owner.User.ID, "nonce": "n-root",
			"correlation_id": "corr-payload-ids"}},
		{"message.deleted", "message_id", reply, want{"message_id": reply, "author_id": owner.User.ID, "nonce": "n-reply",
			"correlation_id": "corr-payload-ids"}},
		{"reaction.added", "message_id", root, want{"message_id": root, "emoji": "👀", "user_id": owner.User.ID, "count": float64(1)}},
		{"reaction.removed", "message_id", root, want{"message_id": root, "emoji": "👀", "user_id": owner.User.ID, "count": float64(0)}},
		{"pin.added", "message_id", root, want{"channel_id": c.general.ID, "message_id": root, "pinned_by": owner.User.ID}},
		{"pin.removed", "message_id", root, want{"channel_id": c.general.ID, "message_id": root, "pinned_by": owner.User.ID}},
		{"channel.member_added", "user_id", c.mod.User.ID, want{"channel_id": secret, "user_id": c.mod.User.ID}},
		{"channel.member_removed", "user_id", c.mod.User.ID, want{"channel_id": secret, "user_id": c.mod.User.ID}},
		{"member.moderation_updated", "user_id", alice.User.ID, want{"user_id": alice.User.ID}},
		{"member.removed", "user_id", alice.User.ID, want{"user_id": alice.User.ID}},
		{"workspace.updated", "workspace_id", c.ws.ID, want{"workspace_id": c.ws.ID}},
		{"workspace.ownership_transferred", "workspace_id", c.ws.ID, want{"workspace_id": c.ws.ID,
			"owner_id": c.mod.User.ID, "previous_owner_id": owner.User.ID}},
	} {
		payload := first(tc.typ, tc.key, tc.value)
		for k, v := range tc.want {
			require.Equal(t, v, payload[k], "%s payload.%s", tc.typ, k)
		}
	}

	// The table covers every durable type the server names.
	covered := map[string]bool{}
	for _, e := range events {
		covered[e["type"].(string)] = true
	}
	for _, typ := range list(t, h.Get(t, "/api/event-types", owner.Token).JSON(t), "event_types") {
		require.True(t, covered[typ.(string)], "no %s event was made", typ)
	}
}

// TestMessageEventCorrelation: a message event's correlation_id is the X-Correlation-ID the
// response carries, the caller's own when it is safe, X-Request-ID next, else one the server made.
func TestMessageEventCorrelation(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	c := newChat(t, h)
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   string // "" means the generated id, whatever it is
	}{
		{"CallersOwn", map[string]string{"X-Correlation-ID": "client-42:retry.1"}, "client-42:retry.1"},
		{"RequestIDNext", map[string]string{"X-Request-ID": "req_7"}, "req_7"},
		{"UnsafeIsReplaced", map[string]string{"X-Correlation-ID": "two words"}, ""},
		{"NoneIsGenerated", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := h.Do(t, servertest.Request{Method: http.MethodPost, Path: channelMessages(c.general.ID), Token: c.alice.Token,
				Body: map[string]any{"body": tc.name}, Header: tc.header})
			r.RequireStatus(t, http.StatusCreated)
			echoed := r.Header.Get("X-Correlation-ID")
			require.NotEmpty(t, echoed)
			if tc.want != "" {
				require.Equal(t, tc.want, echoed)
			} else {
				require.NotEqual(t, "two words", echoed)
			}
			require.Equal(t, echoed, str(t, r.JSON(t), "event", "payload", "correlation_id"))
		})
	}
}
