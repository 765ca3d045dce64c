package streams_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
	"github.com/natterchat/natter/streams/streamstest"
)

// followBundle is one test's NATS and a workspace id whose stream the test creates when it wants.
type followBundle struct {
	nc *nats.Conn
	js jetstream.JetStream
	ws string
}

func followSetup(t *testing.T) *followBundle {
	t.Helper()
	_, nc := streamstest.Embedded(t)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return &followBundle{nc: nc, js: js, ws: persist.NewID("wsp_", time.Now())}
}

// createStream makes the workspace's stream as the relay does: sequence = cursor.
func (b *followBundle) createStream(t *testing.T) {
	t.Helper()
	_, err := b.js.CreateStream(context.Background(), jetstream.StreamConfig{Name: streams.StreamName(b.ws),
		Subjects: []string{streams.EventsSubjects(b.ws)}, Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
}

// publish appends an event of type typ in channel chn_a and returns its cursor.
func (b *followBundle) publish(t *testing.T, typ string) int64 {
	t.Helper()
	return b.publishIn(t, "chn_a", typ)
}

func (b *followBundle) publishIn(t *testing.T, channelID, typ string) int64 {
	t.Helper()
	e := persist.Event{WorkspaceID: b.ws, ChannelID: channelID, Type: typ, Payload: []byte(`{}`)}
	subject, _, err := streams.EncodeEvent(e)
	require.NoError(t, err)
	ack, err := b.js.Publish(context.Background(), subject, fmt.Appendf(nil, `{"id":"evt_%s","type":%q}`, typ, typ))
	require.NoError(t, err)
	return int64(ack.Sequence)
}

// follow runs Follow until the test ends and returns what it hands on.
func (b *followBundle) follow(t *testing.T, edit func(*streams.FollowConfig)) (<-chan streams.Msg, func()) {
	t.Helper()
	got := make(chan streams.Msg, 100)
	cfg := streams.FollowConfig{NATS: b.nc, WorkspaceID: b.ws, Retry: 50 * time.Millisecond,
		Handle: func(_ context.Context, m streams.Msg) { got <- m }}
	if edit != nil {
		edit(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- streams.Follow(ctx, cfg) }()
	stop := func() {
		cancel()
		require.NoError(t, <-done)
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			stop()
		}
	})
	return got, stop
}

func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived")
		panic("unreachable")
	}
}

func TestFollow(t *testing.T) {
	t.Parallel()

	t.Run("FromCursorDecodesOnce", func(t *testing.T) {
		t.Parallel()
		b := followSetup(t)
		b.createStream(t)
		b.publish(t, "message.created")
		b.publishIn(t, "", "workspace.updated")
		got, _ := b.follow(t, func(c *streams.FollowConfig) {
			c.Start = func(context.Context) (streams.Start, error) { return streams.Start{After: 1}, nil }
		})
		m := receive(t, got)
		m.Header = nil // the relay's headers are another test's business
		require.Equal(t, streams.Event{WorkspaceID: b.ws, Cursor: 2, Type: "workspace.updated",
			Envelope: []byte(`{"id":"evt_workspace.updated","type":"workspace.updated"}`)}, m.Event)
		b.publishIn(t, "chn_b", "message.updated")
		m = receive(t, got)
		require.Equal(t, int64(3), m.Cursor)
		require.Equal(t, persist.EventScope{ChannelID: "chn_b"}, m.Scope)
		ids, err := m.IDs()
		require.NoError(t, err)
		require.Equal(t, "evt_message.updated", ids.ID)
	})

	t.Run("AtEndSaysWhereLiveStarts", func(t *testing.T) {
		t.Parallel()
		b := followSetup(t)
		b.createStream(t)
		b.publish(t, "message.created")
		b.publish(t, "message.created")
		live := make(chan int64, 1)
		got, _ := b.follow(t, func(c *streams.FollowConfig) { c.OnLive = func(first int64) { live <- first } })
		require.Equal(t, int64(3), receive(t, live))
		require.Equal(t, int64(3), b.publish(t, "message.deleted"))
		require.Equal(t, int64(3), receive(t, got).Cursor)
	})

	t.Run("WaitsForTheStream", func(t *testing.T) {
		t.Parallel()
		b := followSetup(t)
		live := make(chan int64, 1)
		// A long retry: only the stream-created advisory can wake the follower in time.
		got, _ := b.follow(t, func(c *streams.FollowConfig) {
			c.Retry = time.Hour
			c.Start = func(context.Context) (streams.Start, error) { return streams.Start{}, nil }
			c.OnLive = func(first int64) { live <- first }
		})
		b.createStream(t)
		receive(t, live)
		b.publish(t, "message.created")
		require.Equal(t, int64(1), receive(t, got).Cursor)
	})

	t.Run("OnlyTheTypesAsked", func(t *testing.T) {
		t.Parallel()
		b := followSetup(t)
		b.createStream(t)
		got, _ := b.follow(t, func(c *streams.FollowConfig) {
			c.Types = []string{"thread.reply_created"}
			c.Start = func(context.Context) (streams.Start, error) { return streams.Start{}, nil }
		})
		b.publish(t, "message.created")
		b.publishIn(t, "", "thread.reply_created") // workspace-wide: not a place event
		want := b.publish(t, "thread.reply_created")
		m := receive(t, got)
		require.Equal(t, want, m.Cursor)
		require.Equal(t, "thread.reply_created", m.Type)
	})

	t.Run("DurableRecoversADeletedConsumer", func(t *testing.T) {
		t.Parallel()
		b := followSetup(t)
		b.createStream(t)
		b.publish(t, "message.created")
		handled := make(chan int64, 10)
		starts := make(chan streams.Start, 10)
		var last int64
		got, _ := b.follow(t, func(c *streams.FollowConfig) {
			c.Durable = "natter_test"
			c.MaxAckPending = 1
			c.Start = func(context.Context) (streams.Start, error) {
				s := streams.Start{After: last}
				starts <- s
				return s, nil
			}
			c.Handle = func(_ context.Context, m streams.Msg) {
				last = m.Cursor
				m.Ack()
				handled <- m.Cursor
			}
		})
		require.Empty(t, got)
		require.Equal(t, streams.Start{}, receive(t, starts))
		require.Equal(t, int64(1), receive(t, handled))

		require.NoError(t, streams.DeleteDurable(context.Background(), b.nc, b.ws, "natter_test"))
		require.Equal(t, streams.Start{After: 1}, receive(t, starts), "created again after the last handled cursor")
		b.publish(t, "message.created")
		require.Equal(t, int64(2), receive(t, handled), "not the first event again")
	})

	t.Run("DurableTakesTheConfiguredAckWait", func(t *testing.T) {
		t.Parallel()
		b := followSetup(t)
		b.createStream(t)
		_, err := b.js.CreateConsumer(context.Background(), streams.StreamName(b.ws), jetstream.ConsumerConfig{
			Durable: "natter_test", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
		require.NoError(t, err)
		live := make(chan int64, 1)
		b.follow(t, func(c *streams.FollowConfig) {
			c.Durable, c.AckWait = "natter_test", 5*time.Second
			c.OnLive = func(first int64) { live <- first }
		})
		receive(t, live)
		info, err := b.js.Consumer(context.Background(), streams.StreamName(b.ws), "natter_test")
		require.NoError(t, err)
		require.Equal(t, 5*time.Second, info.CachedInfo().Config.AckWait)
	})

	t.Run("HeadersTravelWithTheEvent", func(t *testing.T) {
		t.Parallel()
		b := followSetup(t)
		b.createStream(t)
		_, err := b.js.PublishMsg(context.Background(), &nats.Msg{Subject: streams.EventSubject(persist.Event{WorkspaceID: b.ws,
			DirectConversationID: "dm_a", Type: "message.created"}), Data: []byte(`{"id":"evt_1"}`),
			Header: nats.Header{"Natter-Test": []string{"usr_a,usr_b"}}})
		require.NoError(t, err)
		got, _ := b.follow(t, func(c *streams.FollowConfig) {
			c.Start = func(context.Context) (streams.Start, error) { return streams.Start{}, nil }
		})
		m := receive(t, got)
		require.Equal(t, persist.EventScope{DirectConversationID: "dm_a"}, m.Scope)
		require.Equal(t, "usr_a,usr_b", m.Header.Get("Natter-Test"))
	})

	t.Run("DurableNakRedelivers", func(t *testing.T) {
		t.Parallel()
		b := followSetup(t)
		b.createStream(t)
		b.publish(t, "message.created")
		got, _ := b.follow(t, func(c *streams.FollowConfig) {
			c.Durable = "natter_test"
			c.Start = func(context.Context) (streams.Start, error) { return streams.Start{}, nil }
		})
		first := receive(t, got)
		first.Nak(0)
		again := receive(t, got)
		require.Equal(t, first.Cursor, again.Cursor)
		again.Ack()
	})

	t.Run("StopWaitsForTheHandler", func(t *testing.T) {
		t.Parallel()
		b := followSetup(t)
		b.createStream(t)
		entered, release := make(chan struct{}), make(chan struct{})
		returned, live := make(chan struct{}), make(chan int64, 1)
		_, stop := b.follow(t, func(c *streams.FollowConfig) {
			c.OnLive = func(first int64) { live <- first }
			c.Handle = func(context.Context, streams.Msg) {
				close(entered)
				<-release
				close(returned)
			}
		})
		receive(t, live)
		b.publish(t, "message.created")
		<-entered
		stopped := make(chan struct{})
		go func() { stop(); close(stopped) }()
		select {
		case <-stopped:
			t.Fatal("Follow returned while Handle was running")
		case <-release: // never closed yet: this arm only keeps the select honest
		default:
		}
		close(release)
		<-stopped
		select {
		case <-returned:
		default:
			t.Fatal("Follow returned before Handle did")
		}
	})

	t.Run("DeleteDurableOfNothing", func(t *testing.T) {
		t.Parallel()
		b := followSetup(t)
		require.NoError(t, streams.DeleteDurable(context.Background(), b.nc, b.ws, "natter_test"), "no stream")
		b.createStream(t)
		require.NoError(t, streams.DeleteDurable(context.Background(), b.nc, b.ws, "natter_test"), "no consumer")
	})

	t.Run("InvalidConfig", func(t *testing.T) {
		t.Parallel()
		require.Error(t, streams.Follow(context.Background(), streams.FollowConfig{}))
	})
}

// TestFollowerLooksAgainSoonAfterAnEarlyAdvisory: nats-server announces a new stream before
// it can be looked up, and announces it once; a follower woken by the announcement that finds
// nothing looks again within tens of milliseconds, not after its grown back-off (up to Retry),
// while a look the timer prompted keeps backing off and a look that consumed starts over.
func TestFollowerLooksAgainSoonAfterAnEarlyAdvisory(t *testing.T) {
	t.Parallel()
	grown := 800 * time.Millisecond
	require.LessOrEqual(t, streams.NextLook(grown, time.Hour, false, true), 25*time.Millisecond)
	require.Greater(t, streams.NextLook(grown, time.Hour, false, false), grown)
	require.Equal(t, time.Second, streams.NextLook(grown, time.Second, false, false), "never past Retry")
	require.Zero(t, streams.NextLook(grown, time.Hour, true, false))
}

func TestEventIDs(t *testing.T) {
	t.Parallel()
	_, err := streams.Event{Cursor: 7, Envelope: []byte(`{"id":`)}.IDs()
	require.ErrorContains(t, err, "cursor 7")
	_, err = streams.Event{Cursor: 7, Envelope: []byte(`{}`)}.IDs()
	require.ErrorContains(t, err, "no id")
	ids, err := streams.Event{Envelope: []byte(`{"id":"evt_1","message_id":"msg_1"}`)}.IDs()
	require.NoError(t, err)
	require.Equal(t, streams.EnvelopeIDs{ID: "evt_1", MessageID: "msg_1"}, ids)
}

// discover runs Discover on b's NATS with a rescan an hour away, reporting on found; stop ends
// it and waits for it.
func discover(t *testing.T, b *followBundle, store *persist.Store) (found chan string, stop func()) {
	found = make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- streams.Discover(ctx, streams.DiscoverConfig{NATS: b.nc, Store: store, Rescan: time.Hour,
			Found: func(ws string) { found <- ws }})
	}()
	return found, func() { cancel(); require.NoError(t, <-done) }
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	b := followSetup(t)
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	b.ws = persisttest.Workspace(t, store, owner.ID).ID
	b.createStream(t)
	_, err := b.js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "other", Subjects: []string{"other.>"},
		Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	ghost := &followBundle{nc: b.nc, js: b.js, ws: persist.NewID("wsp_", time.Now())}
	ghost.createStream(t) // a stream no workspace in Postgres stands behind
	found, stop := discover(t, b, store)
	require.Equal(t, b.ws, receive(t, found), "an existing stream")
	// Forged stream-created advisories (anyone who may publish on NATS can send them) for
	// workspaces Postgres does not know start nothing.
	for i := range 100 {
		require.NoError(t, b.nc.Publish("$JS.EVENT.ADVISORY.STREAM.CREATED."+streams.StreamName(fmt.Sprintf("wsp_forged%d", i)), nil))
	}
	later := &followBundle{nc: b.nc, js: b.js, ws: persisttest.Workspace(t, store, owner.ID).ID}
	later.createStream(t)
	require.Equal(t, later.ws, receive(t, found), "a stream created afterwards, heard at once (the rescan is an hour away)")
	stop()
	close(found)
	for ws := range found {
		require.Equal(t, later.ws, ws, "each workspace once (a created one may be echoed), and no other stream")
	}
}

// TestDiscoverEchoesAnAdvisory: nats-server announces a new stream before it can be looked up,
// so a follower started on the announcement may find nothing and leave; the workspace is
// reported again a moment later, without waiting for the rescan.
func TestDiscoverEchoesAnAdvisory(t *testing.T) {
	t.Parallel()
	b := followSetup(t)
	store := persisttest.NewStore(t)
	owner := persisttest.User(t, store, nil)
	b.ws = persisttest.Workspace(t, store, owner.ID).ID
	b.createStream(t) // reported by the first scan: Discover is listening by then
	found, stop := discover(t, b, store)
	t.Cleanup(stop)
	require.Equal(t, b.ws, receive(t, found))
	// The announcement of a stream that cannot be looked up yet (published here by hand).
	woken := persisttest.Workspace(t, store, owner.ID).ID
	require.NoError(t, b.nc.Publish("$JS.EVENT.ADVISORY.STREAM.CREATED."+streams.StreamName(woken), nil))
	require.Equal(t, woken, receive(t, found))
	require.Equal(t, woken, receive(t, found), "reported again, an hour before the rescan")
}
