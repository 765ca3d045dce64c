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

// chat is one workspace with #general and #guest and three signed-in people: its owner, a
// moderator and a member (alice). Tests of messages, threads, reactions, pins, DMs, read state
// and search each build their own on a shared harness.
type chat struct {
	h          *servertest.Harness
	ws         persist.Workspace
	general    persist.Channel
	guestRoom  persist.Channel
	owner, mod servertest.Actor
	alice      servertest.Actor
}

func newChat(t *testing.T, h *servertest.Harness) *chat {
	t.Helper()
	c := &chat{h: h, owner: h.NewUser(t)}
	c.ws = persisttest.Workspace(t, h.Store, c.owner.User.ID)
	c.general = persisttest.Channel(t, h.Store, persist.ActorFor(c.owner.User), c.ws.ID, "general")
	c.guestRoom = persisttest.Channel(t, h.Store, persist.ActorFor(c.owner.User), c.ws.ID, persist.GuestChannel)
	c.mod = c.join(t, persist.RoleModerator)
	c.alice = c.join(t, persist.RoleMember)
	return c
}

// join signs in a new person who is a member of the workspace with role.
func (c *chat) join(t *testing.T, role string) servertest.Actor {
	t.Helper()
	a := c.h.NewUser(t)
	persisttest.Member(t, c.h.Store, c.ws.ID, a.User.ID, role)
	return a
}

// channel creates another channel.
func (c *chat) channel(t *testing.T, name string) persist.Channel {
	t.Helper()
	return persisttest.Channel(t, c.h.Store, persist.ActorFor(c.owner.User), c.ws.ID, name)
}

// patchChannel updates a channel as the owner through the channel API.
func (c *chat) patchChannel(t *testing.T, channelID string, body any) {
	t.Helper()
	c.h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/channels/" + channelID, Token: c.owner.Token, Body: body}).
		RequireStatus(t, http.StatusOK)
}

// moderate changes a member's moderation state as the owner through the moderation API.
func (c *chat) moderate(t *testing.T, who servertest.Actor, body any) {
	t.Helper()
	c.h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/workspaces/" + c.ws.ID + "/moderation/members/" + who.User.ID,
		Token: c.owner.Token, Body: body}).RequireStatus(t, http.StatusOK)
}

func channelMessages(id string) string { return "/api/channels/" + id + "/messages" }
func dmMessages(id string) string      { return "/api/dms/" + id + "/messages" }

// post sends a message create to path (channelMessages or dmMessages) as who.
func (c *chat) post(t *testing.T, who servertest.Actor, path string, body any) *servertest.Response {
	t.Helper()
	return c.h.Post(t, path, who.Token, body)
}

// say posts body to path as who and returns the created message.
func (c *chat) say(t *testing.T, who servertest.Actor, path, body string) persist.Message {
	t.Helper()
	r := c.post(t, who, path, map[string]any{"body": body})
	r.RequireStatus(t, http.StatusCreated)
	return messageOf(t, r)
}

// reply posts a thread reply as who and returns it.
func (c *chat) reply(t *testing.T, who servertest.Actor, rootID, body string) persist.Message {
	t.Helper()
	r := c.h.Post(t, "/api/messages/"+rootID+"/thread/replies", who.Token, map[string]any{"body": body})
	r.RequireStatus(t, http.StatusCreated)
	return messageOf(t, r)
}

func (c *chat) del(t *testing.T, who servertest.Actor, path string) *servertest.Response {
	t.Helper()
	return c.h.Do(t, servertest.Request{Method: http.MethodDelete, Path: path, Token: who.Token})
}

// eventsOfType returns the log's events of one type.
func (c *chat) eventsOfType(t *testing.T, typ string) []persist.Event {
	return c.h.Events(t, c.ws.ID, typ)
}

// wireEvent is an event envelope as clients receive it.
type wireEvent struct {
	ID                   string         `json:"id"`
	Cursor               string         `json:"cursor"`
	Type                 string         `json:"type"`
	WorkspaceID          string         `json:"workspace_id"`
	ChannelID            string         `json:"channel_id"`
	DirectConversationID string         `json:"direct_conversation_id"`
	MessageID            string         `json:"message_id"`
	Seq                  *int64         `json:"seq"`
	ActorID              string         `json:"actor_id"`
	Payload              map[string]any `json:"payload"`
}

func messageOf(t *testing.T, r *servertest.Response) persist.Message {
	t.Helper()
	var out struct {
		Message persist.Message `json:"message"`
	}
	r.Decode(t, &out)
	require.NotEmpty(t, out.Message.ID, "%s", r.Body)
	return out.Message
}

func eventOf(t *testing.T, r *servertest.Response) wireEvent {
	t.Helper()
	var out struct {
		Event wireEvent `json:"event"`
	}
	r.Decode(t, &out)
	return out.Event
}

// payloadOf decodes an event's stored payload.
func payloadOf(t *testing.T, e persist.Event) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(e.Payload, &m))
	return m
}

// pageOf decodes a message page.
func pageOf(t *testing.T, r *servertest.Response) persist.Page {
	t.Helper()
	r.RequireStatus(t, http.StatusOK)
	var p persist.Page
	r.Decode(t, &p)
	return p
}

// seqs lists the channel_seq (roots) or thread_seq (replies) of messages in order.
func seqs(msgs []persist.Message) []int64 {
	out := []int64{}
	for _, m := range msgs {
		switch {
		case m.ChannelSeq != nil:
			out = append(out, *m.ChannelSeq)
		case m.ThreadSeq != nil:
			out = append(out, *m.ThreadSeq)
		}
	}
	return out
}

// windowCase is one row of a page-window table: a query and the page it must return.
type windowCase struct {
	name, query        string
	want               []int64
	hasOlder, hasNewer bool
}

// requireWindow checks a page against its case: the sequences, the bounds (zero when the page
// is empty) and the edge flags.
func requireWindow(t *testing.T, tc windowCase, p persist.Page) {
	t.Helper()
	require.Equal(t, tc.want, seqs(p.Messages))
	require.Equal(t, tc.hasOlder, p.HasOlder, "has_older")
	require.Equal(t, tc.hasNewer, p.HasNewer, "has_newer")
	if len(tc.want) == 0 {
		require.Zero(t, p.OldestSeq)
		require.Zero(t, p.NewestSeq)
		return
	}
	require.Equal(t, tc.want[0], p.OldestSeq)
	require.Equal(t, tc.want[len(tc.want)-1], p.NewestSeq)
}
