package server_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// threadsOf is who's Threads view of the chat's workspace (one page, with query).
func (c *chat) threadsOf(t *testing.T, who string, query url.Values) persist.ThreadListPage {
	t.Helper()
	r := c.h.Get(t, "/api/workspaces/"+c.ws.ID+"/threads?"+query.Encode(), who)
	r.RequireStatus(t, http.StatusOK)
	var page persist.ThreadListPage
	r.Decode(t, &page)
	return page
}

// rootsOf is the root ids of a page with each thread's unread count.
func rootsOf(page persist.ThreadListPage) map[string]int64 {
	out := map[string]int64{}
	for _, th := range page.Threads {
		out[th.Root.ID] = th.UnreadCount
	}
	return out
}

func (c *chat) markThread(t *testing.T, who servertest.Actor, rootID string, seq int64) persist.Receipt {
	t.Helper()
	r := c.h.Post(t, "/api/messages/"+rootID+"/thread/read", who.Token, map[string]any{"seq": seq})
	r.RequireStatus(t, http.StatusOK)
	var got struct{ Receipt persist.Receipt }
	r.Decode(t, &got)
	return got.Receipt
}

// withHandle gives who a handle through PATCH /api/me.
func (c *chat) withHandle(t *testing.T, who servertest.Actor, handle string) {
	t.Helper()
	c.h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: who.Token,
		Body: map[string]any{"handle": handle}}).RequireStatus(t, http.StatusOK)
}

// TestThreadList pins the Threads view (issue 30): the threads a person is in — they started
// the root, replied, or were @mentioned in the root or a reply — newest activity first, with
// their latest replies and the replies by others they have not read.
func TestThreadList(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)

	t.Run("WhoIsInAThread", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		c.withHandle(t, c.alice, "alice-"+c.ws.ID[len(c.ws.ID)-6:])
		bystander := c.join(t, persist.RoleMember)
		mentioned := c.join(t, persist.RoleMember)
		c.withHandle(t, mentioned, "menti-"+c.ws.ID[len(c.ws.ID)-6:])
		general := channelMessages(c.general.ID)

		root := c.say(t, c.owner, general, "who broke the build? @"+"menti-"+c.ws.ID[len(c.ws.ID)-6:])
		require.Empty(t, c.threadsOf(t, c.owner.Token, nil).Threads, "a root without replies is no thread yet")
		c.reply(t, c.mod, root.ID, "not me")
		c.reply(t, c.mod, root.ID, "ask @ALICE-"+c.ws.ID[len(c.ws.ID)-6:]+", she deployed")

		require.Equal(t, map[string]int64{root.ID: 2}, rootsOf(c.threadsOf(t, c.owner.Token, nil)), "the root's author")
		require.Equal(t, map[string]int64{root.ID: 0}, rootsOf(c.threadsOf(t, c.mod.Token, nil)), "the replier, whose replies are read")
		require.Equal(t, map[string]int64{root.ID: 2}, rootsOf(c.threadsOf(t, c.alice.Token, nil)), "mentioned in a reply, case-insensitively")
		require.Equal(t, map[string]int64{root.ID: 2}, rootsOf(c.threadsOf(t, mentioned.Token, nil)), "mentioned in the root")
		require.Empty(t, c.threadsOf(t, bystander.Token, nil).Threads, "someone not in it")

		// Opening the thread without being in it keeps a read position, not a place in the list.
		require.EqualValues(t, 2, c.markThread(t, bystander, root.ID, 2).LastReadSeq)
		require.Empty(t, c.threadsOf(t, bystander.Token, nil).Threads)
		// ... until they reply, which marks it read up to their reply.
		c.reply(t, c.owner, root.ID, "three")
		c.reply(t, bystander, root.ID, "four, mine")
		c.reply(t, c.mod, root.ID, "five")
		require.Equal(t, map[string]int64{root.ID: 1}, rootsOf(c.threadsOf(t, bystander.Token, nil)))

		page := c.threadsOf(t, c.alice.Token, nil)
		require.Len(t, page.Threads, 1)
		th := page.Threads[0]
		require.Equal(t, root.ID, th.Root.ID)
		require.Equal(t, "who broke the build? @menti-"+c.ws.ID[len(c.ws.ID)-6:], th.Root.Body)
		require.EqualValues(t, 5, th.ThreadState.ReplyCount)
		require.EqualValues(t, 5, th.LastSeq)
		require.EqualValues(t, 5, th.UnreadCount)
		require.Len(t, th.Replies, 3, "the latest three replies")
		require.Equal(t, []string{"three", "four, mine", "five"}, []string{th.Replies[0].Body, th.Replies[1].Body, th.Replies[2].Body})
		require.EqualValues(t, 1, page.UnreadThreads)
		require.Nil(t, page.NextCursor)
	})

	// An edit that adds an @mention makes the person follow the thread, as a reply with it does;
	// one that removes it unfollows no one.
	t.Run("AnEditThatAddsAMention", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		suffix := c.ws.ID[len(c.ws.ID)-6:]
		late, opener, quiet := c.join(t, persist.RoleMember), c.join(t, persist.RoleMember), c.join(t, persist.RoleMember)
		c.withHandle(t, late, "late-"+suffix)
		c.withHandle(t, opener, "opener-"+suffix)
		c.withHandle(t, quiet, "quiet-"+suffix)
		general := channelMessages(c.general.ID)

		root := c.say(t, c.alice, general, "release notes?")
		c.reply(t, c.owner, root.ID, "drafting")
		reply := c.reply(t, c.mod, root.ID, "who reviews?")
		c.edit(t, c.mod, reply.ID, "who reviews? @Late-"+suffix)
		require.Equal(t, map[string]int64{root.ID: 2}, rootsOf(c.threadsOf(t, late.Token, nil)),
			"mentioned by editing a reply: following, every reply unread")

		require.EqualValues(t, 1, c.markThread(t, opener, root.ID, 1).LastReadSeq)
		c.edit(t, c.alice, root.ID, "release notes? @opener-"+suffix)
		require.Equal(t, map[string]int64{root.ID: 1}, rootsOf(c.threadsOf(t, opener.Token, nil)),
			"mentioned by editing the root: following, from where they had read")

		c.edit(t, c.mod, reply.ID, "who reviews? nobody yet")
		c.reply(t, c.owner, root.ID, "three")
		require.Equal(t, map[string]int64{root.ID: 3}, rootsOf(c.threadsOf(t, late.Token, nil)),
			"removing the mention unfollows no one; later replies count")

		lone := c.say(t, c.alice, general, "no replies yet")
		c.edit(t, c.alice, lone.ID, "no replies yet @quiet-"+suffix)
		require.Empty(t, c.threadsOf(t, quiet.Token, nil).Threads, "a root without replies is no thread yet")
		c.reply(t, c.owner, lone.ID, "first")
		require.Equal(t, map[string]int64{lone.ID: 1}, rootsOf(c.threadsOf(t, quiet.Token, nil)))
	})

	t.Run("UnreadCountAndMarkingRead", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		root := c.say(t, c.alice, channelMessages(c.general.ID), "lunch?")
		c.reply(t, c.owner, root.ID, "one")
		two := c.reply(t, c.mod, root.ID, "two")
		c.reply(t, c.owner, root.ID, "three")
		require.Equal(t, map[string]int64{root.ID: 3}, rootsOf(c.threadsOf(t, c.alice.Token, nil)))

		rc := c.markThread(t, c.alice, root.ID, 1)
		require.Equal(t, root.ID, rc.ScopeID)
		require.Equal(t, c.alice.User.ID, rc.UserID)
		require.EqualValues(t, 1, rc.LastReadSeq)
		require.Equal(t, map[string]int64{root.ID: 2}, rootsOf(c.threadsOf(t, c.alice.Token, nil)))
		require.EqualValues(t, 1, c.markThread(t, c.alice, root.ID, 0).LastReadSeq, "a lower seq changes nothing")

		c.del(t, c.mod, "/api/messages/"+two.ID).RequireStatus(t, http.StatusOK)
		page := c.threadsOf(t, c.alice.Token, nil)
		require.Equal(t, map[string]int64{root.ID: 1}, rootsOf(page), "a deleted reply after the mark is not unread")
		require.Equal(t, []string{"one", "three"}, []string{page.Threads[0].Replies[0].Body, page.Threads[0].Replies[1].Body},
			"only live replies are shown")

		require.EqualValues(t, 3, c.markThread(t, c.alice, root.ID, 99).LastReadSeq, "capped at the last reply")
		page = c.threadsOf(t, c.alice.Token, nil)
		require.Equal(t, map[string]int64{root.ID: 0}, rootsOf(page))
		require.Zero(t, page.UnreadThreads)
		c.reply(t, c.alice, root.ID, "my own reply")
		require.Equal(t, map[string]int64{root.ID: 0}, rootsOf(c.threadsOf(t, c.alice.Token, nil)), "one's own reply is never unread")
		c.reply(t, c.owner, root.ID, "five")
		page = c.threadsOf(t, c.alice.Token, nil)
		require.Equal(t, map[string]int64{root.ID: 1}, rootsOf(page))
		require.EqualValues(t, 1, page.UnreadThreads)

		// Deleting the only unread reply leaves nothing unread, in the list and in the count.
		c.markThread(t, c.owner, root.ID, 0)
		last := c.reply(t, c.mod, root.ID, "six, to be removed")
		c.del(t, c.mod, "/api/messages/"+last.ID).RequireStatus(t, http.StatusOK)
		c.markThread(t, c.alice, root.ID, 5)
		page = c.threadsOf(t, c.alice.Token, nil)
		require.Equal(t, map[string]int64{root.ID: 0}, rootsOf(page))
		require.Zero(t, page.UnreadThreads)
	})

	t.Run("NewestActivityFirstInPages", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		general := channelMessages(c.general.ID)
		var roots []persist.Message
		for _, body := range []string{"first", "second", "third"} {
			r := c.say(t, c.alice, general, body)
			c.reply(t, c.owner, r.ID, "re: "+body)
			roots = append(roots, r)
		}
		c.reply(t, c.mod, roots[0].ID, "the first is busy again")
		page := c.threadsOf(t, c.alice.Token, url.Values{"limit": {"2"}})
		require.Len(t, page.Threads, 2)
		require.Equal(t, []string{roots[0].ID, roots[2].ID}, []string{page.Threads[0].Root.ID, page.Threads[1].Root.ID})
		require.EqualValues(t, 3, page.UnreadThreads, "every thread with unread replies, beyond the page")
		require.NotNil(t, page.NextCursor)
		next := c.threadsOf(t, c.alice.Token, url.Values{"limit": {"2"}, "cursor": {*page.NextCursor}})
		require.Len(t, next.Threads, 1)
		require.Equal(t, roots[1].ID, next.Threads[0].Root.ID)
		require.Nil(t, next.NextCursor)

		// A cursor is the caller's own, for this workspace.
		c.h.Get(t, "/api/workspaces/"+c.ws.ID+"/threads?cursor="+url.QueryEscape(*page.NextCursor), c.owner.Token).
			RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		for _, bad := range []string{"limit=0", "limit=-1", "limit=two", "cursor=bm90LWEtY3Vyc29y", "cursor=%25%25"} {
			c.h.Get(t, "/api/workspaces/"+c.ws.ID+"/threads?"+bad, c.alice.Token).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
		require.Len(t, c.threadsOf(t, c.alice.Token, url.Values{"limit": {"1000"}}).Threads, 3, "above the maximum is the maximum")
	})

	t.Run("OnlyWhatTheReaderMayRead", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		guest := c.join(t, persist.RoleGuest)
		c.withHandle(t, guest, "guest-"+c.ws.ID[len(c.ws.ID)-6:])
		r := c.h.Post(t, "/api/workspaces/"+c.ws.ID+"/channels", c.owner.Token, map[string]any{"name": "secret", "visibility": "private"})
		r.RequireStatus(t, http.StatusCreated)
		var created struct{ Channel persist.Channel }
		r.Decode(t, &created)
		c.h.Post(t, "/api/channels/"+created.Channel.ID+"/members", c.owner.Token, map[string]any{"user_id": c.alice.User.ID}).
			RequireStatus(t, http.StatusCreated)

		secret := c.say(t, c.alice, channelMessages(created.Channel.ID), "a secret plan")
		c.reply(t, c.owner, secret.ID, "agreed")
		open := c.say(t, c.alice, channelMessages(c.general.ID), "hello @guest-"+c.ws.ID[len(c.ws.ID)-6:])
		c.reply(t, c.owner, open.ID, "welcome")
		lobby := c.say(t, guest, channelMessages(c.guestRoom.ID), "hi, I am new")
		c.reply(t, c.alice, lobby.ID, "hi!")
		_, dm := c.openDM(t, c.alice, c.owner.User.ID)
		inDM := c.say(t, c.alice, dmMessages(dm.ID), "just between us")
		c.reply(t, c.owner, inDM.ID, "sure")

		require.Equal(t, map[string]int64{secret.ID: 1, open.ID: 1, lobby.ID: 0, inDM.ID: 1}, rootsOf(c.threadsOf(t, c.alice.Token, nil)))
		require.Equal(t, map[string]int64{lobby.ID: 1}, rootsOf(c.threadsOf(t, guest.Token, nil)),
			"a guest sees the guest channel's thread, not the one in general they were mentioned in")

		c.del(t, c.alice, "/api/channels/"+created.Channel.ID+"/members/"+c.alice.User.ID).RequireStatus(t, http.StatusOK)
		require.Equal(t, map[string]int64{open.ID: 1, lobby.ID: 0, inDM.ID: 1}, rootsOf(c.threadsOf(t, c.alice.Token, nil)),
			"a private channel one left is gone")
		c.h.Post(t, "/api/messages/"+secret.ID+"/thread/read", c.alice.Token, map[string]any{"seq": 1}).
			RequireError(t, http.StatusNotFound, persist.CodeNotFound)

		outsider := h.NewUser(t)
		c.h.Get(t, "/api/workspaces/"+c.ws.ID+"/threads", outsider.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		c.h.Get(t, "/api/workspaces/"+c.ws.ID+"/threads", "").RequireStatus(t, http.StatusUnauthorized)
	})

	t.Run("BotsWithTheReadScope", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		bot, tok := persisttest.Bot(t, h.Store, c.owner.User, c.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:write"}})
		root := c.say(t, c.alice, channelMessages(c.general.ID), "status?")
		c.h.Post(t, "/api/messages/"+root.ID+"/thread/replies", tok.Token, map[string]any{"body": "all green"}).RequireStatus(t, http.StatusCreated)
		_, dm := c.openDM(t, c.alice, bot.ID)
		inDM := c.say(t, c.alice, dmMessages(dm.ID), "and the deploy?")
		c.h.Post(t, "/api/messages/"+inDM.ID+"/thread/replies", tok.Token, map[string]any{"body": "done"}).RequireStatus(t, http.StatusCreated)
		c.reply(t, c.alice, inDM.ID, "thanks")

		require.Equal(t, map[string]int64{root.ID: 0, inDM.ID: 1}, rootsOf(c.threadsOf(t, tok.Token, nil)))
		noDMs := persisttest.BotToken(t, h.Store, c.owner.User, c.ws.ID, bot.ID, "threads:read")
		require.Equal(t, map[string]int64{root.ID: 0}, rootsOf(c.threadsOf(t, noDMs.Token, nil)),
			"without dms:read no conversation's thread")
		noThreads := persisttest.BotToken(t, h.Store, c.owner.User, c.ws.ID, bot.ID, "messages:read", "dms:read")
		c.h.Get(t, "/api/workspaces/"+c.ws.ID+"/threads", noThreads.Token).RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
		c.h.Post(t, "/api/messages/"+inDM.ID+"/thread/read", noThreads.Token, map[string]any{"seq": 2}).
			RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
		c.h.Post(t, "/api/messages/"+inDM.ID+"/thread/read", tok.Token, map[string]any{"seq": 2}).RequireStatus(t, http.StatusOK)
		require.Equal(t, map[string]int64{root.ID: 0, inDM.ID: 0}, rootsOf(c.threadsOf(t, tok.Token, nil)))
	})

	t.Run("BadMarks", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		root := c.say(t, c.alice, channelMessages(c.general.ID), "q")
		reply := c.reply(t, c.owner, root.ID, "a")
		path := "/api/messages/" + root.ID + "/thread/read"
		for _, body := range []any{map[string]any{}, map[string]any{"seq": -1}} {
			c.h.Post(t, path, c.alice.Token, body).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
		c.h.Post(t, path, c.alice.Token, map[string]any{"seq": "1"}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidJSON)
		c.h.Do(t, servertest.Request{Method: http.MethodPost, Path: path, Token: c.alice.Token, Body: []byte(`{"seq":1}{"seq":2}`)}).
			RequireError(t, http.StatusBadRequest, persist.CodeInvalidJSON)
		c.h.Post(t, "/api/messages/"+reply.ID+"/thread/read", c.alice.Token, map[string]any{"seq": 1}).
			RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		c.h.Post(t, "/api/messages/msg_nope/thread/read", c.alice.Token, map[string]any{"seq": 1}).
			RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		require.Equal(t, map[string]int64{root.ID: 1}, rootsOf(c.threadsOf(t, c.alice.Token, nil)), "nothing changed")
	})
}
