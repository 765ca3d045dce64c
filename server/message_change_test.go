package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestMessageGet(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	c := newChat(t, h)
	m := c.say(t, c.alice, channelMessages(c.general.ID), "hello")
	r := h.Get(t, "/api/messages/"+m.ID, c.owner.Token)
	r.RequireStatus(t, http.StatusOK)
	require.Equal(t, m.ID, messageOf(t, r).ID)
	h.Get(t, "/api/messages/msg_missing", c.owner.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	h.Get(t, "/api/messages/"+m.ID, h.NewUser(t).Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	h.Get(t, "/api/messages/"+m.ID, c.join(t, persist.RoleGuest).Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	dm := persisttest.DM(t, h.Store, c.ws.ID, c.owner.User.ID, c.mod.User.ID)
	private := c.say(t, c.owner, dmMessages(dm), "between us")
	h.Get(t, "/api/messages/"+private.ID, c.alice.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
}

func TestMessageEdit(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	patch := func(who servertest.Actor, id string, body any) *servertest.Response {
		return h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/messages/" + id, Token: who.Token, Body: body})
	}

	t.Run("AuthorEdits", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m := c.say(t, c.alice, channelMessages(c.general.ID), "draft")
		r := patch(c.alice, m.ID, map[string]any{"body": "final"})
		r.RequireStatus(t, http.StatusOK)
		edited := messageOf(t, r)
		require.Equal(t, "final", edited.Body)
		require.NotNil(t, edited.EditedAt)
		require.Equal(t, *m.ChannelSeq, *edited.ChannelSeq)
		ev := eventOf(t, r)
		require.Equal(t, "message.updated", ev.Type)
		require.Equal(t, m.ID, ev.MessageID)
		require.Equal(t, *m.ChannelSeq, *ev.Seq)
		require.Len(t, c.eventsOfType(t, "message.updated"), 1)

		same := patch(c.alice, m.ID, map[string]any{"body": "final"})
		same.RequireStatus(t, http.StatusOK)
		require.NotContains(t, same.JSON(t), "event", "an unchanged body is not an edit")
		require.Len(t, c.eventsOfType(t, "message.updated"), 1)
	})

	t.Run("OnlyTheAuthor", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m := c.say(t, c.alice, channelMessages(c.general.ID), "mine")
		patch(c.owner, m.ID, map[string]any{"body": "theirs"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		patch(c.alice, m.ID, map[string]any{"body": ""}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		patch(c.alice, "msg_missing", map[string]any{"body": "x"}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		c.del(t, c.alice, "/api/messages/"+m.ID).RequireStatus(t, http.StatusOK)
		patch(c.alice, m.ID, map[string]any{"body": "revive"}).RequireError(t, http.StatusConflict, persist.CodeMessageDeleted)
	})
}

func TestMessageDelete(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)

	t.Run("WhoMayDelete", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m1 := c.say(t, c.alice, channelMessages(c.general.ID), "one")
		m2 := c.say(t, c.alice, channelMessages(c.general.ID), "two")
		m3 := c.say(t, c.alice, channelMessages(c.general.ID), "three")
		bob := c.join(t, persist.RoleMember)
		c.del(t, bob, "/api/messages/"+m1.ID).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		c.del(t, c.alice, "/api/messages/"+m1.ID).RequireStatus(t, http.StatusOK)
		c.del(t, c.mod, "/api/messages/"+m2.ID).RequireStatus(t, http.StatusOK)
		c.del(t, c.owner, "/api/messages/"+m3.ID).RequireStatus(t, http.StatusOK)
		c.del(t, c.alice, "/api/messages/msg_missing").RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	})

	t.Run("TombstoneAndEvent", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		quoted := c.say(t, c.owner, channelMessages(c.general.ID), "source")
		m := messageOf(t, c.post(t, c.alice, channelMessages(c.general.ID), map[string]any{"body": "secret", "quoted_message_id": quoted.ID}))
		r := c.del(t, c.alice, "/api/messages/"+m.ID)
		r.RequireStatus(t, http.StatusOK)
		tomb := messageOf(t, r)
		require.Empty(t, tomb.Body)
		require.NotNil(t, tomb.DeletedAt)
		require.Empty(t, tomb.QuotedMessageID, "a tombstone quotes nothing")
		require.Equal(t, *m.ChannelSeq, *tomb.ChannelSeq)
		ev := eventOf(t, r)
		require.Equal(t, "message.deleted", ev.Type)
		require.Equal(t, *m.ChannelSeq, *ev.Seq)
		require.Equal(t, "", ev.Payload["message"].(map[string]any)["body"])

		again := c.del(t, c.alice, "/api/messages/"+m.ID)
		again.RequireStatus(t, http.StatusOK)
		require.NotContains(t, again.JSON(t), "event")
		require.Len(t, c.eventsOfType(t, "message.deleted"), 1)
		got := messageOf(t, h.Get(t, "/api/messages/"+m.ID, c.owner.Token))
		require.NotNil(t, got.DeletedAt)
	})

	t.Run("ReactionsAndPinGoWithTheMessage", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m := c.say(t, c.alice, channelMessages(c.general.ID), "pinned and loved")
		h.Post(t, "/api/messages/"+m.ID+"/reactions", c.owner.Token, map[string]any{"emoji": "❤️"}).RequireStatus(t, http.StatusCreated)
		h.Post(t, "/api/channels/"+c.general.ID+"/pins", c.owner.Token, map[string]any{"message_id": m.ID}).RequireStatus(t, http.StatusCreated)
		r := c.del(t, c.mod, "/api/messages/"+m.ID)
		r.RequireStatus(t, http.StatusOK)
		require.Empty(t, messageOf(t, r).Reactions)
		var out struct {
			Events []wireEvent `json:"events"`
		}
		r.Decode(t, &out)
		require.Len(t, out.Events, 2)
		require.Equal(t, "pin.removed", out.Events[1].Type)
		require.Equal(t, c.owner.User.ID, out.Events[1].Payload["pinned_by"])
		require.Equal(t, c.mod.User.ID, out.Events[1].ActorID)
		pinned := h.Get(t, "/api/channels/"+c.general.ID+"/pins", c.owner.Token).JSON(t)["messages"].([]any)
		require.Empty(t, pinned)
		h.Post(t, "/api/messages/"+m.ID+"/reactions", c.owner.Token, map[string]any{"emoji": "❤️"}).
			RequireError(t, http.StatusConflict, persist.CodeMessageDeleted)
		h.Post(t, "/api/channels/"+c.general.ID+"/pins", c.owner.Token, map[string]any{"message_id": m.ID}).
			RequireError(t, http.StatusConflict, persist.CodeMessageDeleted)
	})

	t.Run("DeletedReplyLeavesTheThreadCount", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		root := c.say(t, c.owner, channelMessages(c.general.ID), "root")
		c.reply(t, c.alice, root.ID, "first")
		second := c.reply(t, c.mod, root.ID, "second")
		r := c.del(t, c.mod, "/api/messages/"+second.ID)
		r.RequireStatus(t, http.StatusOK)
		var out struct {
			Events []wireEvent `json:"events"`
		}
		r.Decode(t, &out)
		require.Equal(t, []string{"message.deleted", "thread.state_updated"}, []string{out.Events[0].Type, out.Events[1].Type})
		require.Nil(t, out.Events[0].Seq, "a reply has no channel_seq")
		require.Equal(t, root.ID, out.Events[1].MessageID)
		require.Equal(t, *root.ChannelSeq, *out.Events[1].Seq)
		require.EqualValues(t, 1, out.Events[1].Payload["thread_state"].(map[string]any)["reply_count"])

		var thread struct {
			Root        persist.Message     `json:"root"`
			Replies     []persist.Message   `json:"replies"`
			ThreadState persist.ThreadState `json:"thread_state"`
		}
		h.Get(t, "/api/messages/"+root.ID+"/thread", c.alice.Token).Decode(t, &thread)
		require.Equal(t, []int64{1, 2}, seqs(thread.Replies), "the tombstone keeps its place in the thread")
		require.NotNil(t, thread.Replies[1].DeletedAt)
		require.EqualValues(t, 1, thread.ThreadState.ReplyCount)
		require.EqualValues(t, 1, thread.Root.ThreadState.ReplyCount)
	})

	t.Run("DeletedRootKeepsItsThread", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		root := c.say(t, c.owner, channelMessages(c.general.ID), "root")
		c.reply(t, c.alice, root.ID, "reply")
		c.del(t, c.owner, "/api/messages/"+root.ID).RequireStatus(t, http.StatusOK)
		var thread struct {
			Root    persist.Message   `json:"root"`
			Replies []persist.Message `json:"replies"`
		}
		h.Get(t, "/api/messages/"+root.ID+"/thread", c.alice.Token).Decode(t, &thread)
		require.NotNil(t, thread.Root.DeletedAt)
		require.Len(t, thread.Replies, 1)
		h.Post(t, "/api/messages/"+root.ID+"/thread/replies", c.alice.Token, map[string]any{"body": "late"}).
			RequireError(t, http.StatusConflict, persist.CodeMessageDeleted)
	})
}
