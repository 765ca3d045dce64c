package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
)

// mentionCounts is who's channel listing's mention_count by channel name, and their
// conversation listing's by conversation id.
func (c *chat) mentionCounts(t *testing.T, who servertest.Actor) map[string]int64 {
	t.Helper()
	r := c.h.Get(t, "/api/workspaces/"+c.ws.ID+"/channels", who.Token)
	r.RequireStatus(t, http.StatusOK)
	var got struct{ Channels []persist.Channel }
	r.Decode(t, &got)
	out := map[string]int64{}
	for _, ch := range got.Channels {
		require.NotNil(t, ch.MentionCount, "the listing carries mention_count for %s", ch.Name)
		out[ch.Name] = *ch.MentionCount
	}
	for _, d := range c.dmList(t, who) {
		out[d.ID] = d.MentionCount
	}
	return out
}

// TestMentionCounts pins mention_count in the channel and conversation listings (issue 30):
// the live root messages by others after the reader's last read that mention them — their
// handle, or @here, @channel, @everyone in a place they are in, posted since they joined —
// and in a direct conversation every unread message.
func TestMentionCounts(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)

	t.Run("MentionsAfterTheMark", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		suffix := c.ws.ID[len(c.ws.ID)-6:]
		c.withHandle(t, c.alice, "alice-"+suffix)
		general := channelMessages(c.general.ID)
		quiet := c.channel(t, "quiet")

		c.say(t, c.owner, general, "before anything: @ALICE-"+suffix)
		c.markRead(t, c.alice, "/api/channels/"+c.general.ID, 1)
		c.say(t, c.owner, general, "hello @alice-"+suffix+", and @channel too") // one message, one mention
		c.say(t, c.mod, general, "@here standup")
		c.say(t, c.owner, general, "mail ops@here.example, @channels and @alice-"+suffix+"x are no mentions")
		c.say(t, c.alice, general, "@everyone my own")
		root := c.say(t, c.owner, general, "a thread")
		c.reply(t, c.mod, root.ID, "@alice-"+suffix+" in a reply")
		gone := c.say(t, c.mod, general, "@alice-"+suffix+" soon deleted")
		c.del(t, c.mod, "/api/messages/"+gone.ID).RequireStatus(t, http.StatusOK)
		c.say(t, c.owner, channelMessages(quiet.ID), "nothing for anyone")

		got := c.mentionCounts(t, c.alice)
		require.EqualValues(t, 2, got["general"], "two mentions after the mark; not her own, a reply, a deleted one")
		require.EqualValues(t, 0, got["quiet"])
		require.EqualValues(t, 2, c.mentionCounts(t, c.mod)["general"],
			"the moderator (no handle) never read: the owner's @channel and alice's @everyone, not their own @here")

		edited := c.say(t, c.owner, general, "no one yet")
		c.edit(t, c.owner, edited.ID, "now @alice-"+suffix)
		require.EqualValues(t, 3, c.mentionCounts(t, c.alice)["general"], "an edit that adds a mention")
		c.edit(t, c.owner, edited.ID, "no one after all")
		require.EqualValues(t, 2, c.mentionCounts(t, c.alice)["general"], "an edit that removes it")
		c.edit(t, c.owner, edited.ID, "@here after all")
		require.EqualValues(t, 3, c.mentionCounts(t, c.alice)["general"], "an edit that adds a broadcast")

		c.markRead(t, c.alice, "/api/channels/"+c.general.ID, 99)
		require.EqualValues(t, 0, c.mentionCounts(t, c.alice)["general"], "read")
		c.edit(t, c.owner, edited.ID, "@alice-"+suffix+" once read")
		require.EqualValues(t, 0, c.mentionCounts(t, c.alice)["general"], "an edit of a message she read")
		c.say(t, c.mod, general, "@everyone again")
		require.EqualValues(t, 1, c.mentionCounts(t, c.alice)["general"])
	})

	t.Run("BroadcastsAddressThoseInThePlace", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		suffix := c.ws.ID[len(c.ws.ID)-6:]
		c.withHandle(t, c.alice, "alice-"+suffix)
		random := c.channel(t, "random")
		c.h.Post(t, "/api/channels/"+random.ID+"/leave", c.alice.Token, nil).RequireStatus(t, http.StatusOK)
		c.say(t, c.owner, channelMessages(random.ID), "@channel in a channel alice left")
		c.say(t, c.owner, channelMessages(random.ID), "but @alice-"+suffix+" may still read it")
		c.say(t, c.owner, channelMessages(c.general.ID), "@everyone before Ben joined")
		secret := c.privateChannel(t, "secret")
		c.say(t, c.owner, channelMessages(secret), "@channel before anyone was added")
		c.h.Post(t, "/api/channels/"+secret+"/members", c.owner.Token, map[string]any{"user_id": c.alice.User.ID}).
			RequireStatus(t, http.StatusCreated)
		c.say(t, c.owner, channelMessages(secret), "@here welcome")
		guest := c.join(t, persist.RoleGuest)
		c.say(t, c.owner, channelMessages(c.guestRoom.ID), "@everyone welcome, guests")
		ben := c.join(t, persist.RoleMember)

		alice := c.mentionCounts(t, c.alice)
		require.EqualValues(t, 1, alice["random"], "her handle, not the broadcast of a channel she left")
		require.EqualValues(t, 1, alice["general"])
		require.EqualValues(t, 1, alice["secret"], "only the broadcast after she was added")
		require.Equal(t, map[string]int64{persist.GuestChannel: 1}, c.mentionCounts(t, guest))
		require.EqualValues(t, 0, c.mentionCounts(t, ben)["general"], "a broadcast from before one joined addresses others")
	})

	t.Run("DirectConversationsCountEveryUnreadMessage", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		_, d := c.openDM(t, c.alice, c.mod.User.ID)
		path := dmMessages(d.ID)
		c.say(t, c.mod, path, "are you there?")
		c.say(t, c.mod, path, "it is about the release")
		c.say(t, c.alice, path, "mine")
		require.EqualValues(t, 2, c.mentionCounts(t, c.alice)[d.ID])
		c.markRead(t, c.alice, "/api/dms/"+d.ID, 3)
		require.EqualValues(t, 0, c.mentionCounts(t, c.alice)[d.ID])
		require.EqualValues(t, 1, c.mentionCounts(t, c.mod)[d.ID])
	})
}
