package server_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestMessageCreate(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)

	t.Run("RootWithSequenceAndEvent", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		r := c.post(t, c.alice, channelMessages(c.general.ID), map[string]any{"body": "  hello *world*\n"})
		r.RequireStatus(t, http.StatusCreated)
		m := messageOf(t, r)
		require.Equal(t, "  hello *world*\n", m.Body, "the body is stored as sent")
		require.Equal(t, int64(1), *m.ChannelSeq)
		require.Nil(t, m.ThreadSeq)
		require.Nil(t, m.ParentMessageID)
		require.Equal(t, m.ID, m.ThreadRootID)
		require.Equal(t, c.general.ID, m.ChannelID)
		require.Equal(t, c.alice.User.ID, m.AuthorID)
		require.Equal(t, c.alice.User.DisplayName, m.Author.DisplayName)
		require.Equal(t, "markdown", m.BodyFormat)
		require.Equal(t, persist.MessageKindMessage, m.Kind)
		require.Equal(t, []persist.ReactionSummary{}, m.Reactions)
		require.Equal(t, []persist.Upload{}, m.Attachments)
		require.Equal(t, &persist.ThreadState{RootMessageID: m.ID, LastReplyAuthorIDs: []string{}}, m.ThreadState)
		require.True(t, strings.HasPrefix(m.RouteID, "M"), m.RouteID)

		raw := r.JSON(t)["message"].(map[string]any)
		require.Contains(t, raw, "parent_message_id", "null for roots, not omitted")
		require.Nil(t, raw["parent_message_id"])
		require.Nil(t, raw["thread_seq"])

		ev := eventOf(t, r)
		require.Equal(t, "message.created", ev.Type)
		require.Equal(t, c.general.ID, ev.ChannelID)
		require.Equal(t, m.ID, ev.MessageID)
		require.Equal(t, int64(1), *ev.Seq)
		logged := c.eventsOfType(t, "message.created")
		require.Len(t, logged, 1, "durable")
		require.Equal(t, ev.ID, logged[0].ID)

		second := c.say(t, c.owner, channelMessages(c.general.ID), "two")
		require.Equal(t, int64(2), *second.ChannelSeq)
		other := c.say(t, c.owner, channelMessages(c.channel(t, "other").ID), "elsewhere")
		require.Equal(t, int64(1), *other.ChannelSeq, "sequences are per channel")
	})

	t.Run("InvalidBodies", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		for _, body := range []any{
			map[string]any{},
			map[string]any{"body": ""},
			map[string]any{"body": " \n\t"},
			map[string]any{"body": strings.Repeat("x", persist.MaxBodyLength+1)},
			map[string]any{"body": "nul \x00 inside"},
			map[string]any{"body": "ok", "nonce": strings.Repeat("n", persist.MaxNonceLength+1)},
			map[string]any{"body": "ok", "kind": "shout"},
		} {
			c.post(t, c.alice, channelMessages(c.general.ID), body).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
		c.post(t, c.alice, channelMessages(c.general.ID), `{"body": 5}`).RequireError(t, http.StatusBadRequest, persist.CodeInvalidJSON)
		c.post(t, c.alice, channelMessages(c.general.ID), map[string]any{"body": strings.Repeat("é", persist.MaxBodyLength)}).
			RequireStatus(t, http.StatusCreated)
		require.Len(t, c.eventsOfType(t, "message.created"), 1)
	})

	t.Run("AgentKindsRefusedForHumans", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		for _, kind := range []string{persist.MessageKindAgentCommentary, persist.MessageKindAgentTool} {
			c.post(t, c.owner, channelMessages(c.general.ID), map[string]any{"body": "thinking", "kind": kind}).
				RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		}
		r := c.post(t, c.owner, channelMessages(c.general.ID), map[string]any{"body": "plain", "kind": "message"})
		r.RequireStatus(t, http.StatusCreated)
		require.Equal(t, persist.MessageKindMessage, messageOf(t, r).Kind)
	})

	t.Run("Quotes", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		quoted := c.say(t, c.owner, channelMessages(c.general.ID), "quote me")
		r := c.post(t, c.alice, channelMessages(c.channel(t, "random").ID), map[string]any{"body": "as they said", "quoted_message_id": quoted.ID})
		r.RequireStatus(t, http.StatusCreated)
		require.Equal(t, quoted.ID, messageOf(t, r).QuotedMessageID, "any readable message of the workspace")

		c.post(t, c.alice, channelMessages(c.general.ID), map[string]any{"body": "x", "quoted_message_id": "msg_nope"}).
			RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		elsewhere := newChat(t, h)
		foreign := elsewhere.say(t, elsewhere.owner, channelMessages(elsewhere.general.ID), "other workspace")
		c.post(t, c.alice, channelMessages(c.general.ID), map[string]any{"body": "x", "quoted_message_id": foreign.ID}).
			RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		dm := persisttest.DM(t, h.Store, c.ws.ID, c.owner.User.ID, c.mod.User.ID)
		private := c.say(t, c.owner, dmMessages(dm), "between us")
		c.post(t, c.alice, channelMessages(c.general.ID), map[string]any{"body": "x", "quoted_message_id": private.ID}).
			RequireError(t, http.StatusNotFound, persist.CodeNotFound)

		c.del(t, c.owner, "/api/messages/"+quoted.ID).RequireStatus(t, http.StatusOK)
		c.post(t, c.alice, channelMessages(c.general.ID), map[string]any{"body": "x", "quoted_message_id": quoted.ID}).
			RequireError(t, http.StatusConflict, persist.CodeMessageDeleted)
	})
}

func TestMessageWriteRules(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)

	t.Run("MembershipAndVisibility", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		stranger := h.NewUser(t)
		c.post(t, stranger, channelMessages(c.general.ID), map[string]any{"body": "hi"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		h.Get(t, channelMessages(c.general.ID), stranger.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		c.post(t, c.alice, channelMessages("chn_missing"), map[string]any{"body": "hi"}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		h.Post(t, channelMessages(c.general.ID), "", map[string]any{"body": "hi"}).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})

	t.Run("GuestsPostOnlyInTheGuestChannelThreeTimesADay", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		guest := c.join(t, persist.RoleGuest)
		c.post(t, guest, channelMessages(c.general.ID), map[string]any{"body": "hi"}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		h.Get(t, channelMessages(c.general.ID), guest.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		for i := range 3 { // SPEC §Limits: guest posting 3 messages per day
			c.say(t, guest, channelMessages(c.guestRoom.ID), fmt.Sprintf("hello %d", i))
		}
		c.post(t, guest, channelMessages(c.guestRoom.ID), map[string]any{"body": "one more"}).RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
		require.Len(t, pageOf(t, h.Get(t, channelMessages(c.guestRoom.ID), guest.Token)).Messages, 3)
	})

	t.Run("ArchivedChannelsRefusePosts", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m := c.say(t, c.alice, channelMessages(c.general.ID), "before archiving")
		c.patchChannel(t, c.general.ID, map[string]any{"archived": true})
		c.post(t, c.owner, channelMessages(c.general.ID), map[string]any{"body": "hi"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		h.Post(t, "/api/messages/"+m.ID+"/thread/replies", c.alice.Token, map[string]any{"body": "re"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		h.Post(t, "/api/messages/"+m.ID+"/reactions", c.alice.Token, map[string]any{"emoji": "👍"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		h.Post(t, "/api/channels/"+c.general.ID+"/pins", c.alice.Token, map[string]any{"message_id": m.ID}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/messages/" + m.ID, Token: c.alice.Token, Body: map[string]any{"body": "edit"}}).
			RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		require.Len(t, pageOf(t, h.Get(t, channelMessages(c.general.ID), c.alice.Token)).Messages, 1, "still readable")
		c.del(t, c.mod, "/api/messages/"+m.ID).RequireStatus(t, http.StatusOK)
		c.patchChannel(t, c.general.ID, map[string]any{"archived": false})
		c.say(t, c.owner, channelMessages(c.general.ID), "back")
	})

	t.Run("TimedOutAndBlockedMembersCannotWrite", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m := c.say(t, c.owner, channelMessages(c.general.ID), "hi")
		timedOut, blocked := c.join(t, persist.RoleMember), c.join(t, persist.RoleMember)
		c.moderate(t, timedOut, map[string]any{"timeout_minutes": 60})
		c.moderate(t, blocked, map[string]any{"blocked": true})
		for _, who := range []servertest.Actor{timedOut, blocked} {
			c.post(t, who, channelMessages(c.general.ID), map[string]any{"body": "hi"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
			h.Post(t, "/api/messages/"+m.ID+"/thread/replies", who.Token, map[string]any{"body": "re"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
			h.Post(t, "/api/messages/"+m.ID+"/reactions", who.Token, map[string]any{"emoji": "👍"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
			h.Post(t, "/api/dms", who.Token, map[string]any{"workspace_id": c.ws.ID, "member_ids": []string{c.owner.User.ID}}).
				RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		}
		c.moderate(t, timedOut, map[string]any{"clear_timeout": true})
		c.say(t, timedOut, channelMessages(c.general.ID), "back again")
	})
}

// TestMessageTimeoutEnds pins the store's clock: a member timed out for a minute cannot post,
// and can once the minute has passed.
func TestMessageTimeoutEnds(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	h := servertest.New(t, servertest.WithStoreOptions(persisttest.WithClock(func() time.Time { return time.Unix(0, now.Load()) })))
	c := newChat(t, h)
	c.moderate(t, c.alice, map[string]any{"timeout_minutes": 1})
	c.post(t, c.alice, channelMessages(c.general.ID), map[string]any{"body": "hi"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	now.Add(int64(61 * time.Second))
	c.say(t, c.alice, channelMessages(c.general.ID), "my timeout is over")
}

func TestMessageNonce(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)

	t.Run("ReplayReturnsTheOriginalWithoutAnEvent", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		body := map[string]any{"body": "once", "nonce": "n-1"}
		first := c.post(t, c.alice, channelMessages(c.general.ID), body)
		first.RequireStatus(t, http.StatusCreated)
		again := c.post(t, c.alice, channelMessages(c.general.ID), body)
		again.RequireStatus(t, http.StatusOK)
		require.Equal(t, messageOf(t, first).ID, messageOf(t, again).ID)
		require.NotContains(t, again.JSON(t), "event")
		require.Len(t, c.eventsOfType(t, "message.created"), 1)

		c.post(t, c.alice, channelMessages(c.general.ID), map[string]any{"body": "another", "nonce": "n-1"}).
			RequireError(t, http.StatusConflict, persist.CodeConflict)
		c.post(t, c.alice, channelMessages(c.channel(t, "random").ID), body).RequireError(t, http.StatusConflict, persist.CodeConflict)
		c.post(t, c.owner, channelMessages(c.general.ID), body).RequireStatus(t, http.StatusCreated) // nonces are per author
	})

	t.Run("ConcurrentDuplicatesCreateOne", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		statuses := make([]int, 8)
		var g errgroup.Group
		for i := range statuses {
			g.Go(func() error {
				statuses[i] = c.post(t, c.alice, channelMessages(c.general.ID), map[string]any{"body": "retry", "nonce": "same"}).Status
				return nil
			})
		}
		require.NoError(t, g.Wait())
		sort.Ints(statuses)
		require.Equal(t, []int{200, 200, 200, 200, 200, 200, 200, 201}, statuses)
		require.Len(t, pageOf(t, h.Get(t, channelMessages(c.general.ID), c.alice.Token)).Messages, 1)
	})

	t.Run("LookupByNonce", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m := messageOf(t, c.post(t, c.alice, channelMessages(c.general.ID), map[string]any{"body": "find me", "nonce": "look-1"}))
		get := func(who servertest.Actor, ws, nonce string) *servertest.Response {
			r := h.Get(t, "/api/messages/by-nonce?workspace_id="+ws+"&nonce="+nonce, who.Token)
			require.Equal(t, "supported", r.Header.Get("X-Natter-Message-Nonce"))
			require.Equal(t, "supported", r.Header.Get("X-ClickClack-Message-Nonce"))
			return r
		}
		r := get(c.alice, c.ws.ID, "look-1")
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, m.ID, messageOf(t, r).ID)
		get(c.alice, c.ws.ID, "missing").RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		get(c.owner, c.ws.ID, "look-1").RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		get(c.alice, c.ws.ID, "").RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		// Even a refusal by the access layer says that look-ups are supported.
		get(servertest.Actor{Token: "sst_unknown"}, c.ws.ID, "look-1").RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)

		other := newChat(t, h)
		persisttest.Member(t, h.Store, other.ws.ID, c.alice.User.ID, persist.RoleMember)
		get(c.alice, other.ws.ID, "look-1").RequireError(t, http.StatusConflict, persist.CodeConflict)
	})
}

func TestMessageList(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	c := newChat(t, h)
	for i := 1; i <= 10; i++ {
		c.say(t, c.alice, channelMessages(c.general.ID), fmt.Sprintf("m%d", i))
	}
	list := func(query string) persist.Page {
		return pageOf(t, h.Get(t, channelMessages(c.general.ID)+"?"+query, c.owner.Token))
	}

	for _, tc := range []windowCase{
		{"EarliestByDefault", "limit=3", []int64{1, 2, 3}, false, true},
		{"AfterZeroIsFromTheFirst", "after_seq=0&limit=2", []int64{1, 2}, false, true},
		{"After", "after_seq=8", []int64{9, 10}, true, false},
		{"Before", "before_seq=3", []int64{1, 2}, false, true},
		{"Latest", "latest=true&limit=3", []int64{8, 9, 10}, true, false},
		{"ModeLatest", "mode=latest&limit=2", []int64{9, 10}, true, false},
		{"LatestFalseIsOmitted", "latest=false&limit=2", []int64{1, 2}, false, true},
		{"AroundIsBalanced", "around_seq=5&limit=3", []int64{4, 5, 6}, true, true},
		{"AroundFillsFromAfter", "around_seq=1&limit=4", []int64{1, 2, 3, 4}, false, true},
		{"AroundFillsFromBefore", "around_seq=10&limit=4", []int64{7, 8, 9, 10}, true, false},
		{"AboveTheMaximumIsTheMaximum", "limit=500", []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, false, false},
		{"EmptyPage", "after_seq=10", []int64{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireWindow(t, tc, list(tc.query))
		})
	}

	t.Run("BadQueriesAre400", func(t *testing.T) {
		t.Parallel()
		for _, q := range []string{"before_seq=2&after_seq=1", "around_seq=2&before_seq=5", "after_seq=1&latest=true",
			"before_seq=-1", "after_seq=1.5", "around_seq=abc", "after_seq=", "latest=maybe", "mode=oldest"} {
			h.Get(t, channelMessages(c.general.ID)+"?"+q, c.owner.Token).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
	})

	t.Run("TombstonesKeepTheirPlace", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		for i := 1; i <= 3; i++ {
			c.say(t, c.alice, channelMessages(c.general.ID), fmt.Sprintf("m%d", i))
		}
		p := listGeneral(t, c, "")
		c.del(t, c.alice, "/api/messages/"+p.Messages[1].ID).RequireStatus(t, http.StatusOK)
		p = listGeneral(t, c, "")
		require.Equal(t, []int64{1, 2, 3}, seqs(p.Messages))
		require.NotNil(t, p.Messages[1].DeletedAt)
		require.Empty(t, p.Messages[1].Body)
	})
}

// listGeneral lists #general as alice.
func listGeneral(t *testing.T, c *chat, query string) persist.Page {
	t.Helper()
	return pageOf(t, c.h.Get(t, channelMessages(c.general.ID)+"?"+query, c.alice.Token))
}

// TestMessageConcurrentPostsAreGapless has 16 people post into one channel at once: every
// channel_seq from 1 to N is used exactly once, and each message.created event carries its
// message's sequence.
func TestMessageConcurrentPostsAreGapless(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	c := newChat(t, h)
	const posters, each = 16, 8
	var g errgroup.Group
	for range posters {
		who := c.join(t, persist.RoleMember)
		g.Go(func() error {
			for i := range each {
				if r := c.post(t, who, channelMessages(c.general.ID), map[string]any{"body": fmt.Sprint(i)}); r.Status != http.StatusCreated {
					return fmt.Errorf("status %d: %s", r.Status, r.Body)
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	p := pageOf(t, h.Get(t, channelMessages(c.general.ID)+"?limit=200", c.owner.Token))
	want := make([]int64, posters*each)
	for i := range want {
		want[i] = int64(i + 1)
	}
	require.Equal(t, want, seqs(p.Messages))
	bySeq := map[int64]string{}
	for _, m := range p.Messages {
		bySeq[*m.ChannelSeq] = m.ID
	}
	evs := c.eventsOfType(t, "message.created")
	require.Len(t, evs, posters*each)
	for _, e := range evs {
		require.Equal(t, bySeq[*e.Seq], e.MessageID)
	}
}
