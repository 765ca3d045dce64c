package streams

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
)

func handedEvents(ws string, cursors ...int64) []persist.Event {
	out := make([]persist.Event, len(cursors))
	for i, c := range cursors {
		out[i] = persist.Event{WorkspaceID: ws, Cursor: c, ID: "evt_" + string(rune('a'+c))}
	}
	return out
}

func cursorsOf(events []persist.Event) []int64 {
	out := []int64{}
	for _, e := range events {
		out = append(out, e.Cursor)
	}
	return out
}

// TestHandoffTakesOnlyTheContinuation: a workspace's events are kept only once a pass asked
// for it; a pass gets them only as the exact continuation of its position, in cursor order
// whatever order they were offered in, never the same cursor twice.
func TestHandoffTakesOnlyTheContinuation(t *testing.T) {
	h := newHandoff()
	h.offer(handedEvents("w1", 1, 2))
	require.Empty(t, h.take("w1", 0, 10), "nothing is kept before the first pass over the workspace")

	h.offer(handedEvents("w1", 6, 7))    // a later group's hand-off ran first
	h.offer(handedEvents("w1", 3, 4, 5)) // then the earlier one's
	h.offer(handedEvents("w1", 4))       // offered twice
	h.offer(handedEvents("w2", 1))       // never passed over here: not kept
	require.Equal(t, []int64{3, 4, 5, 6, 7}, cursorsOf(h.take("w1", 2, 10)))
	require.Equal(t, 0, h.total)

	h.offer(handedEvents("w1", 9, 10))
	require.Empty(t, h.take("w1", 7, 10), "cursor 8 is missing: the pass reads the log")
	require.Equal(t, []int64{9, 10}, cursorsOf(h.take("w1", 8, 10)), "after the log gave 8, 9 and 10 continue")
	h.offer(handedEvents("w1", 11, 12, 13))
	require.Equal(t, []int64{13}, cursorsOf(h.take("w1", 12, 10)), "what the stream already holds is dropped")
	require.Equal(t, 0, h.total)

	h.offer(handedEvents("w1", 14, 15, 16))
	require.Equal(t, []int64{14, 15}, cursorsOf(h.take("w1", 13, 2)), "at most n")
	require.Equal(t, []int64{16}, cursorsOf(h.take("w1", 15, 2)))

	h.offer(handedEvents("w1", 17))
	h.forget("w1")
	require.Equal(t, 0, h.total)
	h.offer(handedEvents("w1", 18))
	require.Empty(t, h.take("w1", 17, 10), "a forgotten workspace is not kept until its next pass")
	h.offer(handedEvents("w1", 18))
	h.reset()
	require.Equal(t, 0, h.total)
}

// TestHandoffBounded: past the limit, all workspaces together, offers are dropped (the pass reads
// the log instead).
func TestHandoffBounded(t *testing.T) {
	h := newHandoff()
	h.take("w1", 0, 1)
	h.take("w2", 0, 1)
	many := make([]int64, 0, 9000)
	for c := int64(1); c <= 9000; c++ {
		many = append(many, c)
	}
	h.offer(handedEvents("w1", many...))
	require.Equal(t, 8192, h.total)
	h.offer(handedEvents("w2", 1))
	require.Empty(t, h.take("w2", 0, 10))
	require.Len(t, h.take("w1", 0, 10000), 8192)
	h.offer(handedEvents("w2", 1))
	require.Len(t, h.take("w2", 0, 10), 1, "room again once taken")
}
