package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func pins(channelID string) string { return "/api/channels/" + channelID + "/pins" }

// pinList is the body of GET pins: the pinned messages, and who pinned each.
type pinList struct {
	Messages []persist.Message `json:"messages"`
	Pins     []persist.Pin     `json:"pins"`
}

func TestPins(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)

	t.Run("AddListRemove", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		first := c.say(t, c.alice, channelMessages(c.general.ID), "first")
		second := c.say(t, c.alice, channelMessages(c.general.ID), "second")
		r := h.Post(t, pins(c.general.ID), c.alice.Token, map[string]any{"message_id": first.ID})
		r.RequireStatus(t, http.StatusCreated)
		ev := eventOf(t, r)
		require.Equal(t, "pin.added", ev.Type)
		require.Equal(t, c.general.ID, ev.ChannelID)
		require.Equal(t, map[string]any{"channel_id": c.general.ID, "message_id": first.ID, "pinned_by": c.alice.User.ID}, ev.Payload)
		var added struct {
			PinnedMessage persist.Message `json:"pinned_message"`
		}
		r.Decode(t, &added)
		require.Equal(t, first.ID, added.PinnedMessage.ID, "the pinned message in full")
		require.Equal(t, "first", added.PinnedMessage.Body)
		require.Equal(t, c.alice.User.ID, added.PinnedMessage.AuthorID)
		h.Post(t, pins(c.general.ID), c.owner.Token, map[string]any{"message_id": second.ID}).RequireStatus(t, http.StatusCreated)
		h.Post(t, "/api/messages/"+first.ID+"/reactions", c.owner.Token, map[string]any{"emoji": "📌"}).RequireStatus(t, http.StatusCreated)

		var list pinList
		h.Get(t, pins(c.general.ID), c.mod.Token).Decode(t, &list)
		require.Len(t, list.Messages, 2)
		require.Equal(t, second.ID, list.Messages[0].ID, "newest pin first")
		require.Equal(t, "second", list.Messages[0].Body, "full message objects")
		require.Equal(t, first.ID, list.Messages[1].ID)
		require.Equal(t, []persist.ReactionSummary{{Emoji: "📌", Count: 1}}, list.Messages[1].Reactions)
		require.Len(t, list.Pins, 2)
		require.Equal(t, second.ID, list.Pins[0].MessageID, "pins in the same order")
		require.Equal(t, c.owner.User.ID, list.Pins[0].PinnedBy)

		h.Post(t, pins(c.general.ID), c.mod.Token, map[string]any{"message_id": first.ID}).RequireError(t, http.StatusConflict, persist.CodeConflict)
		r = c.del(t, c.mod, pins(c.general.ID)+"/"+first.ID)
		r.RequireStatus(t, http.StatusOK)
		ev = eventOf(t, r)
		require.Equal(t, "pin.removed", ev.Type)
		require.Equal(t, c.alice.User.ID, ev.Payload["pinned_by"], "who pinned it")
		require.Equal(t, c.mod.User.ID, ev.ActorID, "who unpinned it")
		require.Equal(t, *first.ChannelSeq, *ev.Seq)
		c.del(t, c.mod, pins(c.general.ID)+"/"+first.ID).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		list = pinList{}
		h.Get(t, pins(c.general.ID), c.mod.Token).Decode(t, &list)
		require.Len(t, list.Messages, 1)
		require.Len(t, c.eventsOfType(t, "pin.added"), 2)
		require.Len(t, c.eventsOfType(t, "pin.removed"), 1)
	})

	t.Run("Refusals", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m := c.say(t, c.alice, channelMessages(c.general.ID), "here")
		other := c.channel(t, "other")
		h.Post(t, pins(other.ID), c.alice.Token, map[string]any{"message_id": m.ID}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		h.Post(t, pins(c.general.ID), c.alice.Token, map[string]any{"message_id": "msg_missing"}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		h.Post(t, pins(c.general.ID), c.alice.Token, map[string]any{}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		h.Post(t, pins(c.general.ID), h.NewUser(t).Token, map[string]any{"message_id": m.ID}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		h.Get(t, pins(c.general.ID), c.join(t, persist.RoleGuest).Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		h.Post(t, pins("chn_missing"), c.alice.Token, map[string]any{"message_id": m.ID}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)

		dm := persisttest.DM(t, h.Store, c.ws.ID, c.owner.User.ID, c.alice.User.ID)
		private := c.say(t, c.owner, dmMessages(dm), "no pins here")
		h.Post(t, pins(c.general.ID), c.owner.Token, map[string]any{"message_id": private.ID}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		h.Post(t, pins(dm), c.owner.Token, map[string]any{"message_id": private.ID}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)

		gone := c.say(t, c.alice, channelMessages(c.general.ID), "soon gone")
		c.del(t, c.alice, "/api/messages/"+gone.ID).RequireStatus(t, http.StatusOK)
		h.Post(t, pins(c.general.ID), c.alice.Token, map[string]any{"message_id": gone.ID}).RequireError(t, http.StatusConflict, persist.CodeMessageDeleted)
	})

	// LimitHoldsUnderConcurrency fills a channel to 95 pins and then pins 12 more messages at
	// once: exactly 5 succeed; deleting a pinned message frees its slot.
	t.Run("LimitHoldsUnderConcurrency", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		ids := seedMessages(t, c, 100+7) // SPEC §Limits: 100 pins per channel
		for _, id := range ids[:100-5] {
			h.Post(t, pins(c.general.ID), c.alice.Token, map[string]any{"message_id": id}).RequireStatus(t, http.StatusCreated)
		}
		statuses := make([]int, 12)
		var g errgroup.Group
		for i, id := range ids[100-5:] {
			g.Go(func() error {
				statuses[i] = h.Post(t, pins(c.general.ID), c.alice.Token, map[string]any{"message_id": id}).Status
				return nil
			})
		}
		require.NoError(t, g.Wait())
		created := 0
		for _, s := range statuses {
			if s == http.StatusCreated {
				created++
			} else {
				require.Equal(t, http.StatusConflict, s)
			}
		}
		require.Equal(t, 5, created)
		var list pinList
		h.Get(t, pins(c.general.ID), c.alice.Token).Decode(t, &list)
		require.Len(t, list.Messages, 100)

		var unpinned string
		for _, id := range ids {
			if !pinned(list, id) {
				unpinned = id
				break
			}
		}
		h.Post(t, pins(c.general.ID), c.alice.Token, map[string]any{"message_id": unpinned}).RequireError(t, http.StatusConflict, persist.CodeConflict)
		c.del(t, c.alice, "/api/messages/"+list.Messages[0].ID).RequireStatus(t, http.StatusOK)
		h.Post(t, pins(c.general.ID), c.alice.Token, map[string]any{"message_id": unpinned}).RequireStatus(t, http.StatusCreated)
	})
}

func pinned(l pinList, id string) bool {
	for _, m := range l.Messages {
		if m.ID == id {
			return true
		}
	}
	return false
}

// seedMessages posts n messages to #general as alice straight through the store (the API is
// tested elsewhere; this is set-up) and returns their ids in order.
func seedMessages(t *testing.T, c *chat, n int) []string {
	t.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	for i := range ids {
		res, err := persist.WithTxV(ctx, c.h.Store, func(tx *persist.Tx) (persist.MessageCreated, error) {
			return tx.MessageCreate(ctx, persist.ActorFor(c.alice.User), persist.Place{ChannelID: c.general.ID},
				persist.MessageCreateParams{Body: fmt.Sprint("seed ", i)})
		})
		require.NoError(t, err)
		ids[i] = res.Message.ID
	}
	return ids
}
