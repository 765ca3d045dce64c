package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
)

// dmBody is the body of a single-conversation answer.
type dmBody struct {
	Conversation persist.DM `json:"conversation"`
}

func (c *chat) openDM(t *testing.T, who servertest.Actor, memberIDs ...string) (*servertest.Response, persist.DM) {
	t.Helper()
	r := c.h.Post(t, "/api/dms", who.Token, map[string]any{"workspace_id": c.ws.ID, "member_ids": memberIDs})
	var b dmBody
	if r.Status < 300 {
		r.Decode(t, &b)
	}
	return r, b.Conversation
}

func (c *chat) dmList(t *testing.T, who servertest.Actor) []persist.DM {
	t.Helper()
	r := c.h.Get(t, "/api/dms?workspace_id="+c.ws.ID, who.Token)
	r.RequireStatus(t, http.StatusOK)
	var b struct {
		Conversations []persist.DM `json:"conversations"`
	}
	r.Decode(t, &b)
	return b.Conversations
}

func memberIDsOf(d persist.DM) []string {
	var ids []string
	for _, m := range d.Members {
		ids = append(ids, m.ID)
	}
	return ids
}

func TestDirectConversations(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)

	t.Run("SameMemberSetReturnsTheExistingOne", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		r, d := c.openDM(t, c.alice, c.mod.User.ID)
		r.RequireStatus(t, http.StatusCreated)
		require.ElementsMatch(t, []string{c.alice.User.ID, c.mod.User.ID}, memberIDsOf(d), "the caller is a member")
		require.Equal(t, c.ws.ID, d.WorkspaceID)
		require.NotEmpty(t, d.RouteID)
		require.Zero(t, d.LastSeq)

		r, again := c.openDM(t, c.mod, c.alice.User.ID, c.mod.User.ID, c.alice.User.ID)
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, d.ID, again.ID)

		r, group := c.openDM(t, c.alice, c.mod.User.ID, c.owner.User.ID)
		r.RequireStatus(t, http.StatusCreated)
		require.NotEqual(t, d.ID, group.ID)
		require.Len(t, group.Members, 3)
		r, _ = c.openDM(t, c.owner, c.alice.User.ID, c.mod.User.ID)
		r.RequireStatus(t, http.StatusOK)
	})

	t.Run("MemberRules", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		guest := c.join(t, persist.RoleGuest)
		stranger := h.NewUser(t)
		r, _ := c.openDM(t, guest, c.alice.User.ID)
		r.RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		r, _ = c.openDM(t, c.alice, guest.User.ID)
		r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		r, _ = c.openDM(t, c.alice, stranger.User.ID)
		r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		r, _ = c.openDM(t, c.alice)
		r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		r, _ = c.openDM(t, c.alice, c.alice.User.ID)
		r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		r, _ = c.openDM(t, stranger, c.alice.User.ID)
		r.RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		h.Post(t, "/api/dms", c.alice.Token, map[string]any{"member_ids": []string{c.mod.User.ID}}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)

		var many []string
		for range 32 - 1 { // CONTRACT §Direct conversations: at most 32 members
			many = append(many, c.join(t, persist.RoleMember).User.ID)
		}
		r, d := c.openDM(t, c.alice, many...)
		r.RequireStatus(t, http.StatusCreated)
		require.Len(t, d.Members, 32)
		r, _ = c.openDM(t, c.alice, append(many, c.mod.User.ID)...)
		r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})

	t.Run("OnlyMembersReadAndPost", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		_, d := c.openDM(t, c.alice, c.mod.User.ID)
		m := c.say(t, c.alice, dmMessages(d.ID), "just us")
		require.Equal(t, d.ID, m.DirectConversationID)
		require.Equal(t, int64(1), *m.ChannelSeq)
		reply := c.say(t, c.mod, dmMessages(d.ID), "indeed")
		require.Equal(t, int64(2), *reply.ChannelSeq)
		ev := c.eventsOfType(t, "message.created")[0]
		require.Equal(t, d.ID, ev.DirectConversationID)
		require.Empty(t, ev.ChannelID)
		require.Equal(t, int64(1), *ev.Seq)
		page := pageOf(t, h.Get(t, dmMessages(d.ID)+"?latest=true", c.mod.Token))
		require.Equal(t, []int64{1, 2}, seqs(page.Messages))

		for _, outsider := range []servertest.Actor{c.owner, c.join(t, persist.RoleGuest)} {
			h.Get(t, "/api/dms/"+d.ID, outsider.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
			h.Get(t, dmMessages(d.ID), outsider.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
			c.post(t, outsider, dmMessages(d.ID), map[string]any{"body": "let me in"}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		}
		h.Get(t, dmMessages(d.ID), h.NewUser(t).Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		h.Get(t, "/api/dms/dm_missing", c.alice.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		c.post(t, c.alice, dmMessages(d.ID), map[string]any{"body": "agent", "kind": persist.MessageKindAgentTool}).
			RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})

	t.Run("ListNewestActivityFirstWithHideAndOpen", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		_, withMod := c.openDM(t, c.alice, c.mod.User.ID)
		_, withOwner := c.openDM(t, c.alice, c.owner.User.ID)
		c.say(t, c.mod, dmMessages(withMod.ID), "bump")
		list := c.dmList(t, c.alice)
		require.Equal(t, []string{withMod.ID, withOwner.ID}, []string{list[0].ID, list[1].ID})
		require.Equal(t, int64(1), list[0].LastSeq)
		require.Equal(t, int64(1), list[0].UnreadCount)
		require.Zero(t, list[0].LastReadSeq)
		require.Empty(t, c.dmList(t, c.join(t, persist.RoleMember)))

		r := c.del(t, c.alice, "/api/dms/"+withMod.ID)
		r.RequireStatus(t, http.StatusOK)
		require.Len(t, c.dmList(t, c.alice), 1, "hidden for the caller")
		require.Len(t, c.dmList(t, c.mod), 1, "but not for the others")
		h.Post(t, "/api/dms/"+withMod.ID+"/open", c.alice.Token, nil).RequireStatus(t, http.StatusOK)
		require.Len(t, c.dmList(t, c.alice), 2)

		c.del(t, c.alice, "/api/dms/"+withMod.ID).RequireStatus(t, http.StatusOK)
		c.say(t, c.mod, dmMessages(withMod.ID), "are you there?")
		require.Equal(t, withMod.ID, c.dmList(t, c.alice)[0].ID, "new activity brings it back")

		c.del(t, c.alice, "/api/dms/"+withOwner.ID).RequireStatus(t, http.StatusOK)
		r, _ = c.openDM(t, c.alice, c.owner.User.ID)
		r.RequireStatus(t, http.StatusOK)
		require.Len(t, c.dmList(t, c.alice), 2, "asking for it again reopens it")
		h.Get(t, "/api/dms", c.alice.Token).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})
}
