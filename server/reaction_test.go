package server_test

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// reactionBody is the answer of a reaction add or remove.
type reactionBody struct {
	MessageID string                    `json:"message_id"`
	Reactions []persist.ReactionSummary `json:"reactions"`
	Event     wireEvent                 `json:"event"`
}

func react(t *testing.T, h *servertest.Harness, who servertest.Actor, messageID, emoji string) (*servertest.Response, reactionBody) {
	t.Helper()
	r := h.Post(t, "/api/messages/"+messageID+"/reactions", who.Token, map[string]any{"emoji": emoji})
	var b reactionBody
	if r.Status < 300 {
		r.Decode(t, &b)
	}
	return r, b
}

// unreact sends DELETE with the emoji escaped exactly as given (one path segment).
func unreact(t *testing.T, h *servertest.Harness, who servertest.Actor, messageID, escapedEmoji string) (*servertest.Response, reactionBody) {
	t.Helper()
	r := h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/messages/" + messageID + "/reactions/" + escapedEmoji, Token: who.Token})
	var b reactionBody
	if r.Status < 300 {
		r.Decode(t, &b)
	}
	return r, b
}

func TestReactions(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)

	t.Run("AddRepeatAndRemove", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m := c.say(t, c.owner, channelMessages(c.general.ID), "react to me")
		r, b := react(t, h, c.alice, m.ID, "👍")
		r.RequireStatus(t, http.StatusCreated)
		require.Equal(t, m.ID, b.MessageID)
		require.Equal(t, []persist.ReactionSummary{{Emoji: "👍", Count: 1, ReactedByMe: true}}, b.Reactions)
		require.Equal(t, "reaction.added", b.Event.Type)
		require.Equal(t, *m.ChannelSeq, *b.Event.Seq, "the message's channel_seq")
		require.Equal(t, c.general.ID, b.Event.ChannelID)
		require.Equal(t, map[string]any{"message_id": m.ID, "emoji": "👍", "user_id": c.alice.User.ID, "count": float64(1)}, b.Event.Payload)

		r, b = react(t, h, c.alice, m.ID, "👍")
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, wireEvent{Payload: map[string]any{}}, b.Event, "empty event fields")
		require.Equal(t, []persist.ReactionSummary{{Emoji: "👍", Count: 1, ReactedByMe: true}}, b.Reactions)
		require.Len(t, c.eventsOfType(t, "reaction.added"), 1, "no event for a repeated add")

		_, b = react(t, h, c.mod, m.ID, "👍")
		require.Equal(t, []persist.ReactionSummary{{Emoji: "👍", Count: 2, ReactedByMe: true}}, b.Reactions)
		require.EqualValues(t, 2, b.Event.Payload["count"])
		_, b = react(t, h, c.mod, m.ID, "🎉")
		require.Equal(t, []persist.ReactionSummary{{Emoji: "👍", Count: 2, ReactedByMe: true}, {Emoji: "🎉", Count: 1, ReactedByMe: true}}, b.Reactions)

		got := messageOf(t, h.Get(t, "/api/messages/"+m.ID, c.alice.Token))
		require.Equal(t, []persist.ReactionSummary{{Emoji: "👍", Count: 2, ReactedByMe: true}, {Emoji: "🎉", Count: 1, ReactedByMe: false}}, got.Reactions,
			"reacted_by_me is the viewer's")
		listed := pageOf(t, h.Get(t, channelMessages(c.general.ID), c.owner.Token)).Messages[0]
		require.Equal(t, []persist.ReactionSummary{{Emoji: "👍", Count: 2}, {Emoji: "🎉", Count: 1}}, listed.Reactions)

		r, b = unreact(t, h, c.alice, m.ID, url.PathEscape("👍"))
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, "reaction.removed", b.Event.Type)
		require.EqualValues(t, 1, b.Event.Payload["count"])
		require.Equal(t, []persist.ReactionSummary{{Emoji: "👍", Count: 1}, {Emoji: "🎉", Count: 1}}, b.Reactions)
		r, b = unreact(t, h, c.alice, m.ID, url.PathEscape("👍"))
		r.RequireStatus(t, http.StatusOK)
		require.Empty(t, b.Event.ID, "removing an absent reaction is a no-op")
		require.Len(t, c.eventsOfType(t, "reaction.removed"), 1)

		_, b = unreact(t, h, c.mod, m.ID, url.PathEscape("🎉"))
		require.EqualValues(t, 0, b.Event.Payload["count"])
		require.Equal(t, []persist.ReactionSummary{{Emoji: "👍", Count: 1, ReactedByMe: true}}, b.Reactions, "the moderator still has 👍")
	})

	t.Run("EmojiAreComparedByteForByte", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m := c.say(t, c.owner, channelMessages(c.general.ID), "exact")
		for _, e := range []string{"👍", "👍🏽", "é", "e\u0301", ":thumbsup:", "+1"} {
			r, _ := react(t, h, c.alice, m.ID, e)
			r.RequireStatus(t, http.StatusCreated)
		}
		got := messageOf(t, h.Get(t, "/api/messages/"+m.ID, c.alice.Token))
		require.Len(t, got.Reactions, 6, "no normalisation, no shortcode conversion")
		for _, bad := range []string{"", "x\x00"} {
			r, _ := react(t, h, c.alice, m.ID, bad)
			r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
	})

	t.Run("PathSegmentIsDecodedOnce", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m := c.say(t, c.owner, channelMessages(c.general.ID), "odd emoji")
		for _, e := range []string{"%", "a/b", "%2F", "50%25", "👍", "a b+c"} {
			r, _ := react(t, h, c.alice, m.ID, e)
			r.RequireStatus(t, http.StatusCreated)
		}
		for _, tc := range []struct{ escaped, emoji string }{
			{"%25", "%"}, {"a%2Fb", "a/b"}, {"%252F", "%2F"}, {"50%2525", "50%25"}, {"%F0%9F%91%8D", "👍"}, {"a%20b+c", "a b+c"},
		} {
			r, b := unreact(t, h, c.alice, m.ID, tc.escaped)
			r.RequireStatus(t, http.StatusOK)
			require.Equal(t, "reaction.removed", b.Event.Type, tc.escaped)
			require.Equal(t, tc.emoji, b.Event.Payload["emoji"])
		}
		require.Empty(t, messageOf(t, h.Get(t, "/api/messages/"+m.ID, c.alice.Token)).Reactions)
	})

	t.Run("Access", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m := c.say(t, c.owner, channelMessages(c.general.ID), "members only")
		r, _ := react(t, h, h.NewUser(t), m.ID, "👍")
		r.RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		r, _ = react(t, h, c.join(t, persist.RoleGuest), m.ID, "👍")
		r.RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		r, _ = react(t, h, c.alice, "msg_missing", "👍")
		r.RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		dm := persisttest.DM(t, h.Store, c.ws.ID, c.owner.User.ID, c.mod.User.ID)
		private := c.say(t, c.owner, dmMessages(dm), "psst")
		r, _ = react(t, h, c.alice, private.ID, "👍")
		r.RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		r, b := react(t, h, c.mod, private.ID, "👍")
		r.RequireStatus(t, http.StatusCreated)
		require.Equal(t, dm, b.Event.DirectConversationID)
		reply := c.reply(t, c.alice, m.ID, "a reply")
		r, b = react(t, h, c.owner, reply.ID, "👀")
		r.RequireStatus(t, http.StatusCreated)
		require.Nil(t, b.Event.Seq, "a reply has no channel_seq")
	})

	// ConcurrentAddsCountExactly has many people add the same emoji at once: the final count is
	// the number of people, and the events carry each total from 1 to N exactly once.
	t.Run("ConcurrentAddsCountExactly", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m := c.say(t, c.owner, channelMessages(c.general.ID), "popular")
		const n = 24
		people := make([]servertest.Actor, n)
		for i := range people {
			people[i] = c.join(t, persist.RoleMember)
		}
		var g errgroup.Group
		for _, who := range people {
			g.Go(func() error {
				r := h.Post(t, "/api/messages/"+m.ID+"/reactions", who.Token, map[string]any{"emoji": "🔥"})
				if r.Status != http.StatusCreated {
					return fmt.Errorf("status %d: %s", r.Status, r.Body)
				}
				return nil
			})
		}
		require.NoError(t, g.Wait())
		got := messageOf(t, h.Get(t, "/api/messages/"+m.ID, c.owner.Token))
		require.Equal(t, []persist.ReactionSummary{{Emoji: "🔥", Count: n}}, got.Reactions)
		var counts []int
		for _, e := range c.eventsOfType(t, "reaction.added") {
			counts = append(counts, int(payloadOf(t, e)["count"].(float64)))
		}
		require.Len(t, counts, n)
		require.True(t, sort.IntsAreSorted(counts), "in cursor order the totals only grow: %v", counts)
		require.Equal(t, n, counts[n-1])
		require.Equal(t, 1, counts[0])

		// And as many remove at once: back to nothing.
		g = errgroup.Group{}
		for _, who := range people {
			g.Go(func() error {
				r := h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/messages/" + m.ID + "/reactions/" + url.PathEscape("🔥"), Token: who.Token})
				if r.Status != http.StatusOK {
					return fmt.Errorf("status %d: %s", r.Status, r.Body)
				}
				return nil
			})
		}
		require.NoError(t, g.Wait())
		require.Empty(t, messageOf(t, h.Get(t, "/api/messages/"+m.ID, c.owner.Token)).Reactions)
		require.Len(t, c.eventsOfType(t, "reaction.removed"), n)
	})
}
