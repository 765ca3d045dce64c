package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
)

// unreadOf is who's channel listing, by name: last_seq, last_read_seq and unread_count.
func (c *chat) unreadOf(t *testing.T, who servertest.Actor) map[string]persist.ReadState {
	t.Helper()
	r := c.h.Get(t, "/api/workspaces/"+c.ws.ID+"/channels", who.Token)
	r.RequireStatus(t, http.StatusOK)
	var got struct{ Channels []persist.Channel }
	r.Decode(t, &got)
	out := map[string]persist.ReadState{}
	for _, ch := range got.Channels {
		require.NotNil(t, ch.UnreadCount, "listings carry read state")
		out[ch.Name] = persist.ReadState{LastSeq: ch.LastSeq, LastReadSeq: *ch.LastReadSeq, UnreadCount: *ch.UnreadCount}
	}
	return out
}

func (c *chat) markRead(t *testing.T, who servertest.Actor, path string, seq int64) {
	t.Helper()
	c.h.Post(t, path+"/read", who.Token, map[string]any{"seq": seq}).RequireStatus(t, http.StatusOK)
}

func (c *chat) edit(t *testing.T, who servertest.Actor, id, body string) {
	t.Helper()
	c.h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/messages/" + id, Token: who.Token,
		Body: map[string]any{"body": body}}).RequireStatus(t, http.StatusOK)
}

// TestUnreadCounts pins what unread_count means (live root messages by others after the
// reader's last read) through every write that could move it.
func TestUnreadCounts(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)

	t.Run("OthersRootMessagesAfterTheMark", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		general := channelMessages(c.general.ID)
		for _, body := range []string{"one", "two", "three"} {
			c.say(t, c.owner, general, body)
		}
		c.say(t, c.alice, general, "four, alice's")
		c.say(t, c.mod, general, "five, the moderator's")
		require.Equal(t, persist.ReadState{LastSeq: 5, UnreadCount: 4}, c.unreadOf(t, c.alice)["general"])
		require.Equal(t, persist.ReadState{LastSeq: 5, UnreadCount: 4}, c.unreadOf(t, c.mod)["general"])
		require.Equal(t, persist.ReadState{LastSeq: 5, UnreadCount: 2}, c.unreadOf(t, c.owner)["general"])
		require.Equal(t, persist.ReadState{}, c.unreadOf(t, c.alice)[persist.GuestChannel], "an empty channel")

		c.markRead(t, c.alice, "/api/channels/"+c.general.ID, 3)
		require.Equal(t, persist.ReadState{LastSeq: 5, LastReadSeq: 3, UnreadCount: 1}, c.unreadOf(t, c.alice)["general"],
			"after seq 3 only the moderator's message is someone else's")
		c.markRead(t, c.alice, "/api/channels/"+c.general.ID, 99)
		require.Equal(t, persist.ReadState{LastSeq: 5, LastReadSeq: 5}, c.unreadOf(t, c.alice)["general"])
		c.say(t, c.owner, general, "six")
		require.Equal(t, persist.ReadState{LastSeq: 6, LastReadSeq: 5, UnreadCount: 1}, c.unreadOf(t, c.alice)["general"])
	})

	t.Run("OwnPostsNeverCount", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		general := channelMessages(c.general.ID)
		for range 3 {
			c.say(t, c.alice, general, "talking to myself")
		}
		require.Equal(t, persist.ReadState{LastSeq: 3}, c.unreadOf(t, c.alice)["general"], "nothing unread, nothing read")
		require.Equal(t, persist.ReadState{LastSeq: 3, UnreadCount: 3}, c.unreadOf(t, c.mod)["general"])
		c.markRead(t, c.alice, "/api/channels/"+c.general.ID, 1)
		c.say(t, c.mod, general, "an answer")
		c.say(t, c.alice, general, "and mine after it")
		require.Equal(t, persist.ReadState{LastSeq: 5, LastReadSeq: 1, UnreadCount: 1}, c.unreadOf(t, c.alice)["general"])
	})

	t.Run("ThreadRepliesNeverCount", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		root := c.say(t, c.owner, channelMessages(c.general.ID), "a question")
		for range 3 {
			c.reply(t, c.mod, root.ID, "an answer in the thread")
		}
		c.reply(t, c.alice, root.ID, "alice's answer")
		require.Equal(t, persist.ReadState{LastSeq: 1, UnreadCount: 1}, c.unreadOf(t, c.alice)["general"],
			"the root only; replies take no channel sequence")
		reply := c.reply(t, c.owner, root.ID, "to be removed")
		c.del(t, c.owner, "/api/messages/"+reply.ID).RequireStatus(t, http.StatusOK)
		require.Equal(t, persist.ReadState{LastSeq: 1, UnreadCount: 1}, c.unreadOf(t, c.alice)["general"],
			"a deleted reply changes nothing")
		c.say(t, c.owner, channelMessages(c.general.ID), "after the thread")
		require.Equal(t, persist.ReadState{LastSeq: 2, UnreadCount: 2}, c.unreadOf(t, c.alice)["general"])
	})

	t.Run("EditsChangeNothing", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		general := channelMessages(c.general.ID)
		first := c.say(t, c.owner, general, "typo")
		mine := c.say(t, c.alice, general, "mine")
		c.markRead(t, c.alice, "/api/channels/"+c.general.ID, 1)
		last := c.say(t, c.owner, general, "later")
		c.edit(t, c.owner, first.ID, "fixed typo")
		c.edit(t, c.owner, last.ID, "later")
		c.edit(t, c.owner, last.ID, "later, edited")
		c.edit(t, c.alice, mine.ID, "mine, edited")
		require.Equal(t, persist.ReadState{LastSeq: 3, LastReadSeq: 1, UnreadCount: 1}, c.unreadOf(t, c.alice)["general"])
		require.Equal(t, persist.ReadState{LastSeq: 3, UnreadCount: 1}, c.unreadOf(t, c.owner)["general"])
	})

	t.Run("DeletesBeforeAndAfterTheMark", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		general := channelMessages(c.general.ID)
		var msgs []persist.Message
		for _, who := range []servertest.Actor{c.owner, c.mod, c.alice, c.owner, c.mod, c.alice, c.owner} {
			msgs = append(msgs, c.say(t, who, general, "message"))
		}
		// seqs 1..7 by owner, mod, alice, owner, mod, alice, owner; alice has read up to 3.
		c.markRead(t, c.alice, "/api/channels/"+c.general.ID, 3)
		require.Equal(t, persist.ReadState{LastSeq: 7, LastReadSeq: 3, UnreadCount: 3}, c.unreadOf(t, c.alice)["general"])

		c.del(t, c.owner, "/api/messages/"+msgs[0].ID).RequireStatus(t, http.StatusOK)
		require.Equal(t, int64(3), c.unreadOf(t, c.alice)["general"].UnreadCount, "a read message's deletion changes nothing")
		c.del(t, c.mod, "/api/messages/"+msgs[4].ID).RequireStatus(t, http.StatusOK)
		require.Equal(t, int64(2), c.unreadOf(t, c.alice)["general"].UnreadCount, "an unread message deleted by its author")
		c.del(t, c.alice, "/api/messages/"+msgs[5].ID).RequireStatus(t, http.StatusOK)
		require.Equal(t, int64(2), c.unreadOf(t, c.alice)["general"].UnreadCount, "the reader's own, deleted")
		c.del(t, c.owner, "/api/messages/"+msgs[6].ID).RequireStatus(t, http.StatusOK) // the owner moderates their own
		require.Equal(t, persist.ReadState{LastSeq: 7, LastReadSeq: 3, UnreadCount: 1}, c.unreadOf(t, c.alice)["general"])
		// The moderator had read nothing: owner's 1, 4, 7 and alice's 3, 6, less the deleted 1, 6, 7.
		require.Equal(t, persist.ReadState{LastSeq: 7, UnreadCount: 2}, c.unreadOf(t, c.mod)["general"])
		c.del(t, c.mod, "/api/messages/"+msgs[3].ID).RequireStatus(t, http.StatusOK)
		require.Equal(t, persist.ReadState{LastSeq: 7, LastReadSeq: 3}, c.unreadOf(t, c.alice)["general"],
			"a moderator's deletion of someone else's message counts the same")
		require.Equal(t, persist.ReadState{LastSeq: 7, UnreadCount: 1}, c.unreadOf(t, c.mod)["general"])
	})

	t.Run("GuestsCountOnlyTheGuestChannel", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		guest := c.join(t, persist.RoleGuest)
		c.say(t, c.owner, channelMessages(c.general.ID), "for members")
		c.say(t, c.owner, channelMessages(c.guestRoom.ID), "welcome")
		c.say(t, guest, channelMessages(c.guestRoom.ID), "hello, I am a guest")
		c.say(t, c.mod, channelMessages(c.guestRoom.ID), "hello guest")
		require.Equal(t, map[string]persist.ReadState{persist.GuestChannel: {LastSeq: 3, UnreadCount: 2}}, c.unreadOf(t, guest),
			"a guest lists the guest channel alone, without their own post")
		c.markRead(t, guest, "/api/channels/"+c.guestRoom.ID, 2)
		require.Equal(t, persist.ReadState{LastSeq: 3, LastReadSeq: 2, UnreadCount: 1}, c.unreadOf(t, guest)[persist.GuestChannel])
		require.Equal(t, persist.ReadState{LastSeq: 3, UnreadCount: 3}, c.unreadOf(t, c.alice)[persist.GuestChannel],
			"members count the guest's post")
	})

	t.Run("DirectConversationsCountTheSameWay", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		_, d := c.openDM(t, c.alice, c.mod.User.ID, c.owner.User.ID)
		path := dmMessages(d.ID)
		c.say(t, c.mod, path, "one")
		two := c.say(t, c.owner, path, "two")
		c.say(t, c.alice, path, "three, alice's")
		four := c.say(t, c.mod, path, "four")
		root := c.say(t, c.owner, path, "five")
		c.reply(t, c.mod, root.ID, "a reply")
		c.markRead(t, c.alice, "/api/dms/"+d.ID, 1)
		c.edit(t, c.mod, four.ID, "four, edited")
		c.del(t, c.owner, "/api/messages/"+two.ID).RequireStatus(t, http.StatusOK)
		require.Equal(t, persist.ReadState{LastSeq: 5, LastReadSeq: 1, UnreadCount: 2}, c.dmList(t, c.alice)[0].ReadState)
		require.Equal(t, persist.ReadState{LastSeq: 5, UnreadCount: 2}, c.dmList(t, c.mod)[0].ReadState,
			"alice's three and the owner's five")
	})
}
