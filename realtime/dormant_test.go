package realtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
)

// streamRetired waits until the relay retired the workspace's idle stream after relaying
// cursor through. The log's record matters, not only a missing stream: on a slow machine the
// relay may retire the stream between two of the test's events and create it again for the
// next one, and a look in that moment would see a stream that is about to hold them.
func streamRetired(t testing.TB, e *env, through int64) {
	t.Helper()
	js, err := jetstream.New(e.nc)
	require.NoError(t, err)
	ctx := context.Background()
	require.Eventually(t, func() bool {
		st, err := persist.ReadV(ctx, e.store, func(r *persist.Reader) (persist.RelayState, error) {
			return r.RelayStateGet(ctx, e.ws.ID)
		})
		if err != nil || !st.StreamRetired || st.Relayed < through {
			return false
		}
		_, err = js.Stream(ctx, streams.StreamName(e.ws.ID))
		return errors.Is(err, jetstream.ErrStreamNotFound)
	}, 10*time.Second, 20*time.Millisecond, "the idle stream was not retired")
}

func feedCount(h *Hub) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.feeds)
}

// TestDormantWorkspaceWakesForItsSockets: a workspace whose stream the relay retired has no
// feed and no consumer; its first event reaches a fresh socket; a socket resuming from a cursor
// older than the stream created again gets every event once, in order (the older ones from
// Postgres); after the last socket leaves, the feed stops, its consumer goes, and the stream is
// retired again.
func TestDormantWorkspaceWakesForItsSockets(t *testing.T) {
	t.Parallel()
	e := newEnvWithRelay(t, 1, func(c *Config) { c.FeedLinger = 100 * time.Millisecond },
		func(c *streams.RelayConfig) { c.RetireAfter = 300 * time.Millisecond })
	h := e.hubs[0]
	token := e.session(t, e.member)
	for _, body := range []string{"one", "two", "three"} {
		e.add(t, body) // cursors 2, 3, 4
	}
	streamRetired(t, e, 4)
	require.Equal(t, 0, feedCount(h))

	fresh := e.dial(t, token, "4") // live after cursor 4 (relayed), with no stream yet
	require.Equal(t, int64(5), e.add(t, "wake up"))
	expectCursors(t, fresh, 5)

	resumed := e.dial(t, token, "1")
	expectCursors(t, resumed, 2, 3, 4, 5)
	require.Equal(t, int64(6), e.add(t, "both"))
	expectCursors(t, resumed, 6)
	expectCursors(t, fresh, 6)
	require.GreaterOrEqual(t, catchUpReads(h, "postgres"), 1, "2 to 4 are older than the stream: Postgres's")

	fresh.Close()
	resumed.Close()
	require.Eventually(t, func() bool { return feedCount(h) == 0 }, 10*time.Second, 10*time.Millisecond,
		"the feed outlived its last socket")
	streamRetired(t, e, 6)
}

// TestWakingWorkspaceReachesSocketsBeforeItsStream: the first events of a workspace whose
// stream was retired reach its sockets from the relay's preview, while the stream cannot be
// created yet (another stream holds its subjects); a socket resuming from an older cursor gets
// them after its catch-up from Postgres; once the stream exists, the feed carries on in it
// after the last previewed event: every cursor once, in order, on both.
func TestWakingWorkspaceReachesSocketsBeforeItsStream(t *testing.T) {
	t.Parallel()
	e := newEnvWithRelay(t, 1, func(c *Config) { c.FeedLinger = 100 * time.Millisecond },
		func(c *streams.RelayConfig) { c.RetireAfter = 300 * time.Millisecond })
	token := e.session(t, e.member)
	for _, body := range []string{"one", "two", "three"} {
		e.add(t, body) // cursors 2, 3, 4
	}
	streamRetired(t, e, 4)
	js, err := jetstream.New(e.nc)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "blocker", Subjects: []string{streams.EventsSubjects(e.ws.ID)},
		Storage: jetstream.MemoryStorage})
	require.NoError(t, err)

	fresh := e.dial(t, token, "4")
	resumed := e.dial(t, token, "1")
	require.Equal(t, int64(5), e.add(t, "wake up"))
	expectCursors(t, fresh, 5)
	expectCursors(t, resumed, 2, 3, 4, 5)
	require.Equal(t, int64(6), e.add(t, "still no stream"))
	expectCursors(t, fresh, 6)
	expectCursors(t, resumed, 6)
	_, err = js.Stream(ctx, streams.StreamName(e.ws.ID))
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "the events came before the stream")

	require.NoError(t, js.DeleteStream(ctx, "blocker"))
	require.Eventually(t, func() bool {
		s, err := js.Stream(ctx, streams.StreamName(e.ws.ID))
		return err == nil && s.CachedInfo().State.LastSeq == 6
	}, 10*time.Second, 20*time.Millisecond, "the stream was not created")
	require.Equal(t, int64(7), e.add(t, "in the stream"))
	expectCursors(t, fresh, 7)
	expectCursors(t, resumed, 7)
	require.Equal(t, int64(7), feedLast(e.hubs[0], e.ws.ID))
}

// TestFeedTakesPreviewsOnlyInTurn: a preview the feed of a live workspace cannot place (past a
// gap, naming another workspace, or not shaped by the relay) reaches no socket; the stream's
// events do, each once.
func TestFeedTakesPreviewsOnlyInTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, nil)
	token := e.session(t, e.member)
	require.Equal(t, int64(2), e.add(t, "one"))
	s := e.dial(t, token, "1")
	expectCursors(t, s, 2)
	require.Eventually(t, func() bool { return feedLast(e.hubs[0], e.ws.ID) == 2 }, 10*time.Second, 10*time.Millisecond,
		"the feed is not live")

	forge := func(eventWorkspace string, cursor string) {
		h := nats.Header{}
		h.Set("Natter-Subject", "natter.events."+eventWorkspace+".ch."+e.general+".message.created")
		h.Set(jetstream.MsgIDHeader, eventWorkspace+":"+cursor)
		require.NoError(t, e.nc.PublishMsg(&nats.Msg{Subject: streams.PreviewSubject(e.ws.ID), Header: h,
			Data: []byte(`{"id":"evt_forged","cursor":"` + cursor + `","type":"message.created","payload":{"body":"forged"}}`)}))
	}
	forge(e.ws.ID, "4")      // past the next cursor
	forge("wsp_other", "3")  // another workspace's
	forge(e.ws.ID, "banana") // no cursor
	require.NoError(t, e.nc.PublishMsg(&nats.Msg{Subject: streams.PreviewSubject(e.ws.ID), Data: []byte(`{}`)}))
	require.NoError(t, e.nc.Flush())

	require.Equal(t, int64(3), e.add(t, "two"))
	require.Equal(t, int64(4), e.add(t, "three"))
	for _, body := range []string{"two", "three"} {
		ev := s.Next(t)
		require.NotEqual(t, "evt_forged", ev.ID)
		require.Contains(t, string(ev.Payload), body)
	}
}

// TestDormantWorkspaceIsLiveBeforeItsNextEvent: in a workspace whose stream the relay retired,
// sockets go live at once, not at the workspace's next event: a person coming online is seen
// (presence is ephemeral: it never wakes the stream), and the next event then reaches the
// sockets once, in order. A workspace that never had an event is live the same way.
func TestDormantWorkspaceIsLiveBeforeItsNextEvent(t *testing.T) {
	t.Parallel()
	e := newEnvWithRelay(t, 1, func(c *Config) {
		presenceConfig(c)
		c.FeedLinger = 100 * time.Millisecond
	}, func(c *streams.RelayConfig) { c.RetireAfter = 300 * time.Millisecond })
	require.Equal(t, int64(2), e.add(t, "one"))
	streamRetired(t, e, 2)

	w := e.watch(t, e.owner) // after cursor 1
	expectCursors(t, w, 2)
	nextPresence(t, w, e.owner.ID, true)
	member := e.dial(t, e.session(t, e.member), "2")
	nextPresence(t, w, e.member.ID, true)
	require.Equal(t, int64(3), e.add(t, "awake"))
	expectCursors(t, w, 3)
	expectCursors(t, member, 3)
	require.Equal(t, int64(4), e.add(t, "in the stream"))
	expectCursors(t, w, 4)
	expectCursors(t, member, 4)

	// A workspace without a single event: no stream was ever created.
	fresh := persisttest.Workspace(t, e.store, e.owner.ID)
	persisttest.Member(t, e.store, fresh.ID, e.member.ID, persist.RoleMember)
	e.ws = fresh
	owner := e.session(t, e.owner)
	e.mu.Lock()
	j := e.joins[owner]
	j.Presence = true
	e.joins[owner] = j
	e.mu.Unlock()
	w2 := e.dial(t, owner, "")
	nextPresence(t, w2, e.owner.ID, true)
	e.dial(t, e.session(t, e.member), "")
	nextPresence(t, w2, e.member.ID, true)
}
