package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// realtimeBundle is a workspace with an owner, another member and a guest, the guest channel,
// #general and a conversation between the owner and the guest. Creating the two channels
// appended cursors 1 (guest) and 2 (general).
type realtimeBundle struct {
	h                     *servertest.Harness
	owner, member, guest  servertest.Actor
	ws                    persist.Workspace
	guestChannel, general string
	dm                    string
}

func setupRealtime(t *testing.T, opts ...servertest.Option) *realtimeBundle {
	t.Helper()
	h := servertest.New(t, opts...)
	b := &realtimeBundle{h: h, owner: h.NewUser(t), member: h.NewUser(t), guest: h.NewUser(t)}
	b.ws = persisttest.Workspace(t, h.Store, b.owner.User.ID)
	persisttest.Member(t, h.Store, b.ws.ID, b.member.User.ID, persist.RoleMember)
	persisttest.Member(t, h.Store, b.ws.ID, b.guest.User.ID, persist.RoleGuest)
	owner := persist.ActorFor(b.owner.User)
	b.guestChannel = persisttest.Channel(t, h.Store, owner, b.ws.ID, persist.GuestChannel).ID
	b.general = persisttest.Channel(t, h.Store, owner, b.ws.ID, "general").ID
	b.dm = persisttest.DM(t, h.Store, b.ws.ID, b.owner.User.ID, b.guest.User.ID)
	return b
}

// add appends an event as the owner and returns its cursor.
func (b *realtimeBundle) add(t testing.TB, in persist.EventInput) int64 {
	t.Helper()
	ctx := context.Background()
	in.WorkspaceID, in.ActorID = b.ws.ID, b.owner.User.ID
	if in.Type == "" {
		in.Type = "message.created"
	}
	if in.Payload == nil {
		in.Payload = map[string]string{"body": "hello"}
	}
	ev, err := persist.WithTxV(ctx, b.h.Store, func(tx *persist.Tx) (persist.Event, error) { return tx.EventAppend(ctx, in) })
	require.NoError(t, err)
	return ev.Cursor
}

type pageBody struct {
	Events     []servertest.SocketEvent `json:"events"`
	NextCursor string                   `json:"next_cursor"`
	HasMore    bool                     `json:"has_more"`
	TailCursor *string                  `json:"tail_cursor"`
}

func (b *realtimeBundle) page(t *testing.T, token, query string) pageBody {
	t.Helper()
	r := b.h.Get(t, "/api/realtime/events?workspace_id="+b.ws.ID+query, token)
	r.RequireStatus(t, http.StatusOK)
	var p pageBody
	r.Decode(t, &p)
	return p
}

func eventCursors(events []servertest.SocketEvent) []string {
	out := []string{}
	for _, e := range events {
		out = append(out, e.Cursor)
	}
	return out
}

func TestRealtimeEvents(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t)
	b.add(t, persist.EventInput{ChannelID: b.general})       // 3
	b.add(t, persist.EventInput{DirectConversationID: b.dm}) // 4
	b.add(t, persist.EventInput{ChannelID: b.guestChannel})  // 5
	b.add(t, persist.EventInput{Type: "workspace.updated"})  // 6

	t.Run("PagesWithTail", func(t *testing.T) {
		t.Parallel()
		p := b.page(t, b.owner.Token, "&limit=4&include_tail=true")
		require.Equal(t, []string{"1", "2", "3", "4"}, eventCursors(p.Events))
		require.Equal(t, "4", p.NextCursor)
		require.True(t, p.HasMore)
		require.NotNil(t, p.TailCursor)
		require.Equal(t, "6", *p.TailCursor)
		require.Equal(t, "channel.created", p.Events[0].Type)
		p = b.page(t, b.owner.Token, "&after_cursor=4")
		require.Equal(t, []string{"5", "6"}, eventCursors(p.Events))
		require.False(t, p.HasMore)
		require.Nil(t, p.TailCursor, "tail_cursor only when asked for")
	})
	t.Run("Visibility", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, []string{"1", "2", "3", "5", "6"}, eventCursors(b.page(t, b.member.Token, "").Events),
			"another member never sees the conversation")
		p := b.page(t, b.guest.Token, "&include_tail=true")
		require.Equal(t, []string{"1", "4", "5"}, eventCursors(p.Events), "a guest sees the guest channel and own conversation")
		require.Equal(t, "5", *p.TailCursor)
	})
	t.Run("ResyncRequired", func(t *testing.T) {
		t.Parallel()
		for _, c := range []string{"7", "x", "-1"} {
			b.h.Get(t, "/api/realtime/events?workspace_id="+b.ws.ID+"&after_cursor="+c, b.owner.Token).
				RequireError(t, http.StatusGone, persist.CodeResyncRequired)
		}
	})
	t.Run("BadRequests", func(t *testing.T) {
		t.Parallel()
		for _, q := range []string{"&limit=0", "&limit=ten", "&include_tail=maybe"} {
			b.h.Get(t, "/api/realtime/events?workspace_id="+b.ws.ID+q, b.owner.Token).
				RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
		b.h.Get(t, "/api/realtime/events", b.owner.Token).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		b.h.Get(t, "/api/realtime/events?workspace_id="+b.ws.ID+"&limit=501", b.owner.Token).RequireStatus(t, http.StatusOK)
	})
	t.Run("Access", func(t *testing.T) {
		t.Parallel()
		stranger := b.h.NewUser(t)
		b.h.Get(t, "/api/realtime/events?workspace_id="+b.ws.ID, stranger.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		b.h.Get(t, "/api/realtime/events?workspace_id=wsp_nope", b.owner.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		b.h.Get(t, "/api/realtime/events?workspace_id="+b.ws.ID, "").RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})
}

func TestRealtimeEventsAfterPrune(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t)
	for i := 0; i < 3; i++ {
		b.add(t, persist.EventInput{ChannelID: b.general}) // 3-5
	}
	ctx := context.Background()
	_, err := persist.WithTxV(ctx, b.h.Store, func(tx *persist.Tx) (persist.EventPruneResult, error) {
		return tx.EventPrune(ctx, b.ws.ID, persist.EventPruneParams{KeepLatest: persisttest.Ptr(int64(2))})
	})
	require.NoError(t, err)
	b.h.Get(t, "/api/realtime/events?workspace_id="+b.ws.ID+"&after_cursor=2", b.owner.Token).
		RequireError(t, http.StatusGone, persist.CodeResyncRequired)
	require.Equal(t, []string{"4", "5"}, eventCursors(b.page(t, b.owner.Token, "").Events), "no cursor starts at the oldest retained")
	require.Equal(t, []string{"5"}, eventCursors(b.page(t, b.owner.Token, "&after_cursor=4").Events))
}

func TestRealtimeEphemeral(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t)
	post := func(token string, body map[string]any) *servertest.Response {
		return b.h.Post(t, "/api/realtime/ephemeral", token, body)
	}
	t.Run("DeliveredLiveNotStored", func(t *testing.T) {
		t.Parallel()
		owner := b.dial(t, b.owner.Token, "2")
		guest := b.dial(t, b.guest.Token, "1")
		r := post(b.member.Token, map[string]any{"workspace_id": b.ws.ID, "channel_id": b.general, "type": "typing.started",
			"payload": map[string]any{"user_id": b.member.User.ID}})
		r.RequireStatus(t, http.StatusAccepted)
		e := owner.Next(t)
		require.Equal(t, "typing.started", e.Type)
		require.Equal(t, "", e.Cursor)
		require.Equal(t, b.general, e.ChannelID)
		require.Equal(t, b.member.User.ID, e.ActorID)
		post(b.owner.Token, map[string]any{"direct_conversation_id": b.dm, "type": "presence.changed"}).RequireStatus(t, http.StatusAccepted)
		require.Equal(t, "presence.changed", owner.Next(t).Type)
		require.Equal(t, "presence.changed", guest.Next(t).Type, "the guest missed typing in #general but sees its conversation")
		require.Equal(t, []string{"1", "2"}, eventCursors(b.page(t, b.owner.Token, "").Events), "ephemeral events are not stored")
	})
	// ServerSetsPublisherAndPlace: user_id and the target's id in the payload are the server's,
	// over whatever the client put there; the client's other fields pass through. (Its own
	// bundle: the sockets of DeliveredLiveNotStored must not see these.)
	t.Run("ServerSetsPublisherAndPlace", func(t *testing.T) {
		t.Parallel()
		b := setupRealtime(t)
		post := func(token string, body map[string]any) *servertest.Response {
			return b.h.Post(t, "/api/realtime/ephemeral", token, body)
		}
		forged := map[string]any{"user_id": b.owner.User.ID, "channel_id": "chn_forged", "direct_conversation_id": "dm_forged", "note": "kept"}
		r := post(b.member.Token, map[string]any{"workspace_id": b.ws.ID, "channel_id": b.general, "type": "typing.started", "payload": forged})
		r.RequireStatus(t, http.StatusAccepted)
		require.Equal(t, map[string]any{"user_id": b.member.User.ID, "channel_id": b.general, "note": "kept"}, eventOf(t, r).Payload)
		r = post(b.guest.Token, map[string]any{"direct_conversation_id": b.dm, "type": "typing.stopped", "payload": forged})
		r.RequireStatus(t, http.StatusAccepted)
		require.Equal(t, map[string]any{"user_id": b.guest.User.ID, "direct_conversation_id": b.dm, "note": "kept"}, eventOf(t, r).Payload)
		r = post(b.owner.Token, map[string]any{"channel_id": b.general, "type": "presence.changed"})
		r.RequireStatus(t, http.StatusAccepted)
		require.Equal(t, map[string]any{"user_id": b.owner.User.ID, "channel_id": b.general}, eventOf(t, r).Payload, "with no payload sent")
	})
	t.Run("Refusals", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name   string
			token  string
			body   map[string]any
			status int
			code   persist.Code
		}{
			{"NoTarget", b.owner.Token, map[string]any{"type": "typing.started"}, http.StatusBadRequest, persist.CodeInvalidRequest},
			{"TwoTargets", b.owner.Token, map[string]any{"type": "typing.started", "channel_id": b.general, "direct_conversation_id": b.dm}, http.StatusBadRequest, persist.CodeInvalidRequest},
			{"UnknownType", b.owner.Token, map[string]any{"type": "message.created", "channel_id": b.general}, http.StatusBadRequest, persist.CodeInvalidRequest},
			{"PayloadNotObject", b.owner.Token, map[string]any{"type": "typing.started", "channel_id": b.general, "payload": []int{1}}, http.StatusBadRequest, persist.CodeInvalidRequest},
			{"AgentProgressByHuman", b.owner.Token, map[string]any{"type": "agent.progress", "channel_id": b.general}, http.StatusForbidden, persist.CodeForbidden},
			{"OtherConversation", b.member.Token, map[string]any{"type": "typing.started", "direct_conversation_id": b.dm}, http.StatusNotFound, persist.CodeNotFound},
			{"GuestOutsideGuestChannel", b.guest.Token, map[string]any{"type": "typing.started", "channel_id": b.general}, http.StatusNotFound, persist.CodeNotFound},
			{"WrongWorkspace", b.owner.Token, map[string]any{"type": "typing.started", "channel_id": b.general, "workspace_id": "wsp_other"}, http.StatusNotFound, persist.CodeNotFound},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				post(tc.token, tc.body).RequireError(t, tc.status, tc.code)
			})
		}
	})
}
