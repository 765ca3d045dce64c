package server_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// threadPage is the body of GET /api/messages/{id}/thread.
type threadPage struct {
	Root        persist.Message     `json:"root"`
	Replies     []persist.Message   `json:"replies"`
	ThreadState persist.ThreadState `json:"thread_state"`
	OldestSeq   int64               `json:"oldest_seq"`
	NewestSeq   int64               `json:"newest_seq"`
	HasOlder    bool                `json:"has_older"`
	HasNewer    bool                `json:"has_newer"`
}

func replies(id string) string { return "/api/messages/" + id + "/thread/replies" }

func TestThreadReply(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)

	t.Run("ReplyUpdatesThreadStateAndAppendsBothEvents", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		root := c.say(t, c.owner, channelMessages(c.general.ID), "root")
		r := h.Post(t, replies(root.ID), c.alice.Token, map[string]any{"body": "first"})
		r.RequireStatus(t, http.StatusCreated)
		var out struct {
			Message     persist.Message     `json:"message"`
			ThreadState persist.ThreadState `json:"thread_state"`
			Events      []wireEvent         `json:"events"`
		}
		r.Decode(t, &out)
		reply := out.Message
		require.Equal(t, root.ID, *reply.ParentMessageID)
		require.Equal(t, root.ID, reply.ThreadRootID)
		require.Nil(t, reply.ChannelSeq)
		require.Equal(t, int64(1), *reply.ThreadSeq)
		require.Nil(t, reply.ThreadState, "only roots carry thread_state")
		require.Empty(t, reply.RouteID)
		require.EqualValues(t, 1, out.ThreadState.ReplyCount)
		require.NotNil(t, out.ThreadState.LastReplyAt)
		require.Equal(t, []string{c.alice.User.ID}, out.ThreadState.LastReplyAuthorIDs)

		require.Len(t, out.Events, 2)
		require.Equal(t, "thread.reply_created", out.Events[0].Type)
		require.Equal(t, reply.ID, out.Events[0].MessageID)
		require.Equal(t, c.general.ID, out.Events[0].ChannelID)
		require.Equal(t, "thread.state_updated", out.Events[1].Type)
		require.Equal(t, root.ID, out.Events[1].MessageID)
		require.Equal(t, *root.ChannelSeq, *out.Events[1].Seq)
		require.Len(t, c.eventsOfType(t, "thread.reply_created"), 1, "durable")
		require.Len(t, c.eventsOfType(t, "thread.state_updated"), 1, "durable")
		require.Empty(t, c.eventsOfType(t, "message.created")[1:], "a reply is not a root message.created")

		c.reply(t, c.mod, root.ID, "second")
		third := c.reply(t, c.alice, root.ID, "third")
		require.Equal(t, int64(3), *third.ThreadSeq)
		var th threadPage
		h.Get(t, "/api/messages/"+root.ID+"/thread", c.owner.Token).Decode(t, &th)
		require.EqualValues(t, 3, th.ThreadState.ReplyCount)
		require.Equal(t, []string{c.alice.User.ID, c.mod.User.ID}, th.ThreadState.LastReplyAuthorIDs, "recent first, distinct")
		list := pageOf(t, h.Get(t, channelMessages(c.general.ID), c.owner.Token))
		require.Len(t, list.Messages, 1, "replies are not roots")
		require.EqualValues(t, 3, list.Messages[0].ThreadState.ReplyCount, "hydrated on list pages")
	})

	t.Run("Refusals", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		root := c.say(t, c.owner, channelMessages(c.general.ID), "root")
		reply := c.reply(t, c.alice, root.ID, "reply")
		h.Post(t, replies(root.ID), c.alice.Token, map[string]any{"body": ""}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		h.Post(t, replies(root.ID), c.alice.Token, map[string]any{"body": "  "}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		h.Post(t, replies(reply.ID), c.alice.Token, map[string]any{"body": "nested"}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		h.Post(t, replies("msg_missing"), c.alice.Token, map[string]any{"body": "x"}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		h.Post(t, replies(root.ID), h.NewUser(t).Token, map[string]any{"body": "x"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		h.Post(t, replies(root.ID), c.join(t, persist.RoleGuest).Token, map[string]any{"body": "x"}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		h.Get(t, "/api/messages/"+reply.ID+"/thread", c.alice.Token).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		require.Len(t, c.eventsOfType(t, "thread.reply_created"), 1)
	})

	t.Run("NonceReplay", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		root := c.say(t, c.owner, channelMessages(c.general.ID), "root")
		body := map[string]any{"body": "once", "nonce": "r-1"}
		first := h.Post(t, replies(root.ID), c.alice.Token, body)
		first.RequireStatus(t, http.StatusCreated)
		again := h.Post(t, replies(root.ID), c.alice.Token, body)
		again.RequireStatus(t, http.StatusOK)
		require.Equal(t, messageOf(t, first).ID, messageOf(t, again).ID)
		require.EqualValues(t, 1, again.JSON(t)["thread_state"].(map[string]any)["reply_count"])
		require.NotContains(t, again.JSON(t), "events")
		h.Post(t, replies(root.ID), c.alice.Token, map[string]any{"body": "once", "nonce": "r-1", "quoted_message_id": root.ID}).
			RequireError(t, http.StatusConflict, persist.CodeConflict)
		other := c.say(t, c.owner, channelMessages(c.general.ID), "another root")
		h.Post(t, replies(other.ID), c.alice.Token, body).RequireError(t, http.StatusConflict, persist.CodeConflict)
		require.Len(t, c.eventsOfType(t, "thread.reply_created"), 1)
	})

	t.Run("ThreadsInDirectConversations", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		dm := persisttest.DM(t, h.Store, c.ws.ID, c.owner.User.ID, c.alice.User.ID)
		root := c.say(t, c.owner, dmMessages(dm), "dm root")
		reply := c.reply(t, c.alice, root.ID, "dm reply")
		require.Equal(t, dm, reply.DirectConversationID)
		h.Post(t, replies(root.ID), c.mod.Token, map[string]any{"body": "intrude"}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		h.Get(t, "/api/messages/"+root.ID+"/thread", c.mod.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		ev := c.eventsOfType(t, "thread.reply_created")[0]
		require.Equal(t, dm, ev.DirectConversationID)
	})

	t.Run("ConcurrentRepliesAreGapless", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		root := c.say(t, c.owner, channelMessages(c.general.ID), "busy thread")
		const n = 24
		var g errgroup.Group
		for i := range n {
			who := []servertest.Actor{c.owner, c.mod, c.alice}[i%3]
			g.Go(func() error {
				if r := h.Post(t, replies(root.ID), who.Token, map[string]any{"body": fmt.Sprint(i)}); r.Status != http.StatusCreated {
					return fmt.Errorf("status %d: %s", r.Status, r.Body)
				}
				return nil
			})
		}
		require.NoError(t, g.Wait())
		var th threadPage
		h.Get(t, "/api/messages/"+root.ID+"/thread?limit=200", c.owner.Token).Decode(t, &th)
		want := make([]int64, n)
		for i := range want {
			want[i] = int64(i + 1)
		}
		require.Equal(t, want, seqs(th.Replies))
		require.EqualValues(t, n, th.ThreadState.ReplyCount)
		require.Len(t, th.ThreadState.LastReplyAuthorIDs, 3)
	})
}

func TestThreadPage(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	c := newChat(t, h)
	root := c.say(t, c.owner, channelMessages(c.general.ID), "root")
	var ids []string
	for i := 1; i <= 9; i++ {
		ids = append(ids, c.reply(t, c.alice, root.ID, fmt.Sprintf("r%d", i)).ID)
	}
	c.del(t, c.alice, "/api/messages/"+ids[4]).RequireStatus(t, http.StatusOK) // reply 5 becomes a tombstone
	get := func(query string) threadPage {
		r := h.Get(t, "/api/messages/"+root.ID+"/thread?"+query, c.mod.Token)
		r.RequireStatus(t, http.StatusOK)
		var p threadPage
		r.Decode(t, &p)
		require.Equal(t, root.ID, p.Root.ID)
		return p
	}

	for _, tc := range []windowCase{
		{"EarliestByDefault", "limit=3", []int64{1, 2, 3}, false, true},
		{"Latest", "latest=true&limit=3", []int64{7, 8, 9}, true, false},
		{"LatestFalseIsOmitted", "latest=false&limit=2", []int64{1, 2}, false, true},
		{"Before", "before_seq=4&limit=2", []int64{2, 3}, true, true},
		{"After", "after_seq=7", []int64{8, 9}, true, false},
		{"AroundIncludesTombstones", "around_seq=5&limit=3", []int64{4, 5, 6}, true, true},
		{"AroundEvenLimitLeansNewer", "around_seq=5&limit=4", []int64{4, 5, 6, 7}, true, true},
		{"AroundFillsFromTheOtherSide", "around_seq=9&limit=5", []int64{5, 6, 7, 8, 9}, true, false},
		{"AroundMissingSeq", "around_seq=50&limit=2", []int64{8, 9}, true, false},
		{"LimitZeroIs100", "limit=0", []int64{1, 2, 3, 4, 5, 6, 7, 8, 9}, false, false},
		{"LimitNotANumberIs100", "limit=many", []int64{1, 2, 3, 4, 5, 6, 7, 8, 9}, false, false},
		{"Limit201Is100", "limit=201", []int64{1, 2, 3, 4, 5, 6, 7, 8, 9}, false, false},
		{"EmptyPage", "before_seq=1", []int64{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := get(tc.query)
			requireWindow(t, tc, persist.Page{Messages: p.Replies, OldestSeq: p.OldestSeq, NewestSeq: p.NewestSeq,
				HasOlder: p.HasOlder, HasNewer: p.HasNewer})
		})
	}

	t.Run("TombstoneInPage", func(t *testing.T) {
		t.Parallel()
		p := get("around_seq=5&limit=1")
		require.Len(t, p.Replies, 1)
		require.NotNil(t, p.Replies[0].DeletedAt)
		require.Empty(t, p.Replies[0].Body)
		require.EqualValues(t, 8, p.ThreadState.ReplyCount)
	})

	t.Run("BadQueriesAre400", func(t *testing.T) {
		t.Parallel()
		for _, q := range []string{"before_seq=3&after_seq=1", "after_seq=1&around_seq=2", "before_seq=1&after_seq=1&around_seq=1",
			"around_seq=4&latest=true", "before_seq=-3", "after_seq=x", "around_seq=2.0", "latest=sure"} {
			h.Get(t, "/api/messages/"+root.ID+"/thread?"+q, c.mod.Token).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
	})
}

// TestThreadRoutes resolves thread roots through the route resolver: by `M…` or `msg_…`, with
// their channel or direct conversation as parent, only for those who can read them.
func TestThreadRoutes(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	c := newChat(t, h)
	root := c.say(t, c.alice, channelMessages(c.general.ID), "linkable")
	reply := c.reply(t, c.mod, root.ID, "a reply")
	dm := persisttest.DM(t, h.Store, c.ws.ID, c.owner.User.ID, c.mod.User.ID)
	private := c.say(t, c.owner, dmMessages(dm), "private thread")
	route := func(who servertest.Actor, target string) *servertest.Response {
		return h.Get(t, "/api/routes/"+c.ws.RouteID+"/"+target, who.Token)
	}
	var got struct {
		Route persist.RouteTarget `json:"route"`
	}
	for _, ref := range []string{root.RouteID, root.ID} {
		r := route(c.owner, ref)
		r.RequireStatus(t, http.StatusOK)
		r.Decode(t, &got)
		require.Equal(t, persist.RouteTarget{WorkspaceID: c.ws.ID, WorkspaceRouteID: c.ws.RouteID, TargetType: persist.RouteThread,
			TargetID: root.ID, TargetRouteID: root.RouteID, ParentType: persist.RouteChannel, ParentID: c.general.ID,
			ParentRouteID: c.general.RouteID, CanonicalPath: "/" + c.ws.RouteID + "/" + root.RouteID,
			ChannelID: c.general.ID, MessageID: root.ID}, got.Route)
	}
	r := route(c.mod, private.RouteID)
	r.RequireStatus(t, http.StatusOK)
	r.Decode(t, &got)
	require.Equal(t, persist.RouteDirect, got.Route.ParentType)
	require.Equal(t, dm, got.Route.DirectConversationID)
	route(c.alice, private.RouteID).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	route(c.join(t, persist.RoleGuest), root.RouteID).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	route(c.owner, reply.ID).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	other := newChat(t, h)
	h.Get(t, "/api/routes/"+other.ws.RouteID+"/"+root.RouteID, other.owner.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
}
