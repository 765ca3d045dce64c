package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
)

func TestReadReceipts(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	mark := func(who servertest.Actor, path string, body any) *servertest.Response {
		return h.Post(t, path, who.Token, body)
	}
	receiptOf := func(r *servertest.Response) persist.Receipt {
		r.RequireStatus(t, http.StatusOK)
		var b struct {
			Receipt persist.Receipt `json:"receipt"`
		}
		r.Decode(t, &b)
		return b.Receipt
	}

	t.Run("ChannelReceiptsOnlyMoveForwardAndStopAtTheEnd", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		for range 4 {
			c.say(t, c.owner, channelMessages(c.general.ID), "news")
		}
		path := "/api/channels/" + c.general.ID + "/read"
		rc := receiptOf(mark(c.alice, path, map[string]any{"seq": 2}))
		require.Equal(t, persist.Receipt{ScopeID: c.general.ID, UserID: c.alice.User.ID, LastReadSeq: 2, LastReadAt: rc.LastReadAt}, rc)
		back := receiptOf(mark(c.alice, path, map[string]any{"seq": 1}))
		require.Equal(t, rc, back, "a lower seq changes nothing")
		require.Equal(t, int64(4), receiptOf(mark(c.alice, path, map[string]any{"seq": 99})).LastReadSeq, "capped at the last sequence")
		require.Equal(t, int64(2), receiptOf(mark(c.mod, path, map[string]any{"seq": 2})).LastReadSeq, "receipts are per person")

		mark(c.alice, path, map[string]any{"seq": -1}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		mark(c.alice, path, map[string]any{}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		mark(c.alice, path, map[string]any{"seq": "2"}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidJSON)
		mark(h.NewUser(t), path, map[string]any{"seq": 1}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		mark(c.join(t, persist.RoleGuest), path, map[string]any{"seq": 1}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	})

	t.Run("DirectConversationListingsCarryReadState", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		_, d := c.openDM(t, c.alice, c.mod.User.ID)
		c.say(t, c.alice, dmMessages(d.ID), "mine")
		c.say(t, c.mod, dmMessages(d.ID), "theirs 1")
		gone := c.say(t, c.mod, dmMessages(d.ID), "theirs 2")
		c.say(t, c.mod, dmMessages(d.ID), "theirs 3")
		c.del(t, c.mod, "/api/messages/"+gone.ID).RequireStatus(t, http.StatusOK)

		got := c.dmList(t, c.alice)[0]
		require.Equal(t, persist.ReadState{LastSeq: 4, LastReadSeq: 0, UnreadCount: 2}, got.ReadState,
			"unread counts live messages by others")
		rc := receiptOf(mark(c.alice, "/api/dms/"+d.ID+"/read", map[string]any{"seq": 2}))
		require.Equal(t, d.ID, rc.ScopeID)
		got = c.dmList(t, c.alice)[0]
		require.Equal(t, persist.ReadState{LastSeq: 4, LastReadSeq: 2, UnreadCount: 1}, got.ReadState)
		var one dmBody
		h.Get(t, "/api/dms/"+d.ID, c.mod.Token).Decode(t, &one)
		require.Equal(t, persist.ReadState{LastSeq: 4, UnreadCount: 1}, one.Conversation.ReadState,
			"for the moderator only alice's message is unread, not their own")
		mark(c.owner, "/api/dms/"+d.ID+"/read", map[string]any{"seq": 1}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	})

	t.Run("ChannelListingsCarryReadState", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		c.say(t, c.alice, channelMessages(c.general.ID), "mine")
		c.say(t, c.mod, channelMessages(c.general.ID), "theirs 1")
		c.say(t, c.mod, channelMessages(c.general.ID), "theirs 2")
		mark(c.alice, "/api/channels/"+c.general.ID+"/read", map[string]any{"seq": 2}).RequireStatus(t, http.StatusOK)
		var got struct{ Channels []persist.Channel }
		h.Get(t, "/api/workspaces/"+c.ws.ID+"/channels", c.alice.Token).Decode(t, &got)
		byName := map[string]persist.ReadState{}
		for _, ch := range got.Channels {
			require.NotNil(t, ch.LastReadSeq, "listings carry read state")
			byName[ch.Name] = persist.ReadState{LastSeq: ch.LastSeq, LastReadSeq: *ch.LastReadSeq, UnreadCount: *ch.UnreadCount}
		}
		require.Equal(t, persist.ReadState{LastSeq: 3, LastReadSeq: 2, UnreadCount: 1}, byName["general"])
		require.Equal(t, persist.ReadState{}, byName[persist.GuestChannel])
	})
}
