package server_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
)

// TestReactionLimits: issue 22, defect 5. A message carries at most 50 distinct emoji and one
// person puts at most 20 reactions on it; beyond, 409 too_many_reactions and nothing changes.
// The limits hold when adds race.
func TestReactionLimits(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	emoji := func(i int) string { return fmt.Sprintf("e%03d", i) }
	summaries := func(t *testing.T, c *chat, messageID string) []persist.ReactionSummary {
		t.Helper()
		return messageOf(t, h.Get(t, "/api/messages/"+messageID, c.owner.Token)).Reactions
	}

	t.Run("TwentyPerPerson", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m := c.say(t, c.owner, channelMessages(c.general.ID), "react to me")
		for i := range 20 {
			r, _ := react(t, h, c.alice, m.ID, emoji(i))
			r.RequireStatus(t, http.StatusCreated)
		}
		r, _ := react(t, h, c.alice, m.ID, emoji(20))
		r.RequireError(t, http.StatusConflict, persist.CodeTooManyReactions)
		// An emoji someone else already put there counts against alice's 20 too.
		r, _ = react(t, h, c.mod, m.ID, "👍")
		r.RequireStatus(t, http.StatusCreated)
		r, _ = react(t, h, c.alice, m.ID, "👍")
		r.RequireError(t, http.StatusConflict, persist.CodeTooManyReactions)
		// Nothing of the refused adds is kept, and no event tells of them.
		got := summaries(t, c, m.ID)
		require.Len(t, got, 21)
		require.Equal(t, persist.ReactionSummary{Emoji: "👍", Count: 1}, got[20])
		require.Len(t, c.eventsOfType(t, "reaction.added"), 21)
		// Repeating one she has is still the 200 no-op, and removing one makes room.
		r, _ = react(t, h, c.alice, m.ID, emoji(0))
		r.RequireStatus(t, http.StatusOK)
		r, _ = unreact(t, h, c.alice, m.ID, emoji(0))
		r.RequireStatus(t, http.StatusOK)
		r, _ = react(t, h, c.alice, m.ID, "👍")
		r.RequireStatus(t, http.StatusCreated)
	})

	t.Run("FiftyDistinctEmoji", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		bob, carol := c.join(t, persist.RoleMember), c.join(t, persist.RoleMember)
		m := c.say(t, c.owner, channelMessages(c.general.ID), "react to me")
		for i := range 50 {
			who := []servertest.Actor{c.alice, bob, carol}[i/20]
			r, _ := react(t, h, who, m.ID, emoji(i))
			r.RequireStatus(t, http.StatusCreated)
		}
		r, _ := react(t, h, carol, m.ID, "a fifty-first")
		r.RequireError(t, http.StatusConflict, persist.CodeTooManyReactions)
		require.Len(t, summaries(t, c, m.ID), 50)
		// One already there can still be added by anyone.
		r, b := react(t, h, c.owner, m.ID, emoji(0))
		r.RequireStatus(t, http.StatusCreated)
		require.EqualValues(t, 2, b.Event.Payload["count"])
		// Once an emoji's last reaction goes, its place is free.
		r, _ = unreact(t, h, carol, m.ID, emoji(49))
		r.RequireStatus(t, http.StatusOK)
		r, _ = react(t, h, carol, m.ID, "a fifty-first")
		r.RequireStatus(t, http.StatusCreated)
	})

	t.Run("RacingAddsKeepTheLimits", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		m := c.say(t, c.owner, channelMessages(c.general.ID), "react to me")
		// 48 distinct emoji by 3 people, then 8 people race to add a new one each: 2 places left.
		fill := []servertest.Actor{c.alice, c.mod, c.owner}
		for i := range 48 {
			r, _ := react(t, h, fill[i/16], m.ID, emoji(i))
			r.RequireStatus(t, http.StatusCreated)
		}
		racers := make([]servertest.Actor, 8)
		for i := range racers {
			racers[i] = c.join(t, persist.RoleMember)
		}
		statuses := race(t, len(racers), func(i int) *servertest.Response {
			r, _ := react(t, h, racers[i], m.ID, fmt.Sprintf("new%d", i))
			return r
		})
		require.Equal(t, map[int]int{http.StatusCreated: 2, http.StatusConflict: 6}, statuses)
		require.Len(t, summaries(t, c, m.ID), 50)

		// One person at 16 of 20 races 8 adds of emoji already there: 4 places left.
		statuses = race(t, 8, func(i int) *servertest.Response {
			r, _ := react(t, h, c.alice, m.ID, emoji(16+i))
			return r
		})
		require.Equal(t, map[int]int{http.StatusCreated: 4, http.StatusConflict: 4}, statuses)
	})
}

// race runs n requests at once and counts their statuses.
func race(t *testing.T, n int, do func(i int) *servertest.Response) map[int]int {
	t.Helper()
	got := make([]int, n)
	var g errgroup.Group
	for i := range n {
		g.Go(func() error {
			got[i] = do(i).Status
			return nil
		})
	}
	require.NoError(t, g.Wait())
	out := map[int]int{}
	for _, s := range got {
		out[s]++
	}
	return out
}
