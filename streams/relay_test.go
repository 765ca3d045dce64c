package streams_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
	"github.com/natterchat/natter/streams/streamstest"
)

// relayBundle is one test's database, NATS and workspace.
type relayBundle struct {
	store *persist.Store
	nc    *nats.Conn
	js    jetstream.JetStream
	owner persist.User
	ws    persist.Workspace
}

func setup(t *testing.T) *relayBundle {
	t.Helper()
	_, nc := streamstest.Embedded(t)
	store := persisttest.NewStore(t, func(c *persist.Config) { *c = streams.StoreConfig(nc, *c) })
	owner := persisttest.User(t, store, nil)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return &relayBundle{store: store, nc: nc, js: js, owner: owner, ws: persisttest.Workspace(t, store, owner.ID)}
}

// relayed is the relay's OnRelayed signal as a channel.
type relayed chan int64

// start runs a relay until the returned stop is called (or the test ends) and reports every
// recorded position of the bundle's workspace.
func (b *relayBundle) start(t *testing.T, edit func(*streams.RelayConfig)) (relayed, *streams.Relay, func()) {
	t.Helper()
	ch := make(relayed, 1000)
	cfg := streams.RelayConfig{Store: b.store, NATS: b.nc, Logger: slog.New(slog.DiscardHandler), Shards: 4,
		PollInterval: time.Hour, ClaimInterval: time.Hour,
		OnRelayed: func(id string, c int64) {
			if id == b.ws.ID {
				ch <- c
			}
		}}
	if edit != nil {
		edit(&cfg)
	}
	r, err := streams.NewRelay(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return ch, r, stop
}

// waitFor blocks until the relay records cursor, failing after a deadline.
func (ch relayed) waitFor(t *testing.T, cursor int64) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c := <-ch:
			if c == cursor {
				return
			}
		case <-deadline:
			t.Fatalf("relay did not record cursor %d", cursor)
		}
	}
}

// appendEvents appends n events to the workspace, in parallel transactions.
func (b *relayBundle) appendEvents(t *testing.T, n int, in persist.EventInput) {
	t.Helper()
	ctx := context.Background()
	var g errgroup.Group
	for i := 0; i < n; i++ {
		g.Go(func() error {
			return b.store.WithTx(ctx, func(tx *persist.Tx) error {
				e := in
				e.WorkspaceID, e.ActorID, e.Payload = b.ws.ID, b.owner.ID, map[string]int{"i": i}
				if e.Type == "" {
					e.Type = "test.event"
				}
				_, err := tx.EventAppend(ctx, e)
				return err
			})
		})
	}
	require.NoError(t, g.Wait())
}

// streamState reads the stream's state and every message in it, by sequence.
func (b *relayBundle) streamState(t *testing.T) (jetstream.StreamState, []*jetstream.RawStreamMsg) {
	t.Helper()
	ctx := context.Background()
	s, err := b.js.Stream(ctx, streams.StreamName(b.ws.ID))
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	var msgs []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		require.NoError(t, err, "sequence %d", seq)
		msgs = append(msgs, m)
	}
	return info.State, msgs
}

func (b *relayBundle) log(t *testing.T) []persist.Event {
	t.Helper()
	ctx := context.Background()
	events, err := persist.WithTxV(ctx, b.store, func(tx *persist.Tx) ([]persist.Event, error) {
		return tx.EventListAfter(ctx, b.ws.ID, 0, 10000)
	})
	require.NoError(t, err)
	return events
}

// requireMirror checks that the stream holds exactly the retained log: sequence == cursor, the
// message id, the subject of the event's scope and the envelope's bytes.
func (b *relayBundle) requireMirror(t *testing.T) {
	t.Helper()
	events := b.log(t)
	state, msgs := b.streamState(t)
	require.Len(t, msgs, len(events))
	if len(events) > 0 {
		require.Equal(t, uint64(events[0].Cursor), state.FirstSeq)
	}
	for i, e := range events {
		m := msgs[i]
		require.Equal(t, uint64(e.Cursor), m.Sequence)
		require.Equal(t, fmt.Sprintf("%s:%d", b.ws.ID, e.Cursor), m.Header.Get(jetstream.MsgIDHeader))
		require.Equal(t, streams.EventSubject(e), m.Subject)
		want, err := json.Marshal(e)
		require.NoError(t, err)
		require.Equal(t, string(want), string(m.Data), "cursor %d", e.Cursor)
	}
}

// TestRelayMirrorsTheLogInCursorOrder relays events of every scope, appended concurrently, and
// finds them in the stream with sequence == cursor. The poll is off, so after the first pass
// only wake-ups can move the relay.
func TestRelayMirrorsTheLogInCursorOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.appendEvents(t, 1, persist.EventInput{})
	ch, _, _ := b.start(t, nil)
	ch.waitFor(t, 1)

	dm := persisttest.DM(t, b.store, b.ws.ID, b.owner.ID)
	channel := persisttest.Channel(t, b.store, persist.ActorFor(b.owner), b.ws.ID, "general") // cursor 2
	b.appendEvents(t, 10, persist.EventInput{ChannelID: channel.ID, Type: "message.created"})
	b.appendEvents(t, 10, persist.EventInput{DirectConversationID: dm, Type: "message.created"})
	b.appendEvents(t, 10, persist.EventInput{Type: "workspace.updated"})
	ch.waitFor(t, 32)
	b.requireMirror(t)
}

// TestRelaySkipsWhatAnEarlierRunPublished is the crash between publish and record: the stream
// already holds the first events, the recorded position does not know it, and nothing is
// stored twice.
func TestRelaySkipsWhatAnEarlierRunPublished(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.appendEvents(t, 5, persist.EventInput{})
	ctx := context.Background()
	_, err := b.js.CreateStream(ctx, jetstream.StreamConfig{Name: streams.StreamName(b.ws.ID),
		Subjects: []string{streams.EventsSubjects(b.ws.ID)}})
	require.NoError(t, err)
	for _, e := range b.log(t)[:3] {
		body, err := json.Marshal(e)
		require.NoError(t, err)
		_, err = b.js.PublishMsg(ctx, &nats.Msg{Subject: streams.EventSubject(e), Data: body},
			jetstream.WithMsgID(fmt.Sprintf("%s:%d", b.ws.ID, e.Cursor)))
		require.NoError(t, err)
	}
	ch, _, _ := b.start(t, nil)
	ch.waitFor(t, 5)
	b.requireMirror(t)
}

// TestRelayRebuildsALostStream deletes the stream under a running relay: the relay recreates
// it from Postgres, sequence still == cursor.
func TestRelayRebuildsALostStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.appendEvents(t, 5, persist.EventInput{})
	ch, _, _ := b.start(t, func(c *streams.RelayConfig) { c.PollInterval = 20 * time.Millisecond })
	ch.waitFor(t, 5)
	require.NoError(t, b.js.DeleteStream(context.Background(), streams.StreamName(b.ws.ID)))
	b.appendEvents(t, 1, persist.EventInput{})
	ch.waitFor(t, 0)
	ch.waitFor(t, 6)
	b.requireMirror(t)
}

// TestRelayRebuildsAnEmptiedStream purges the stream under a running relay: the next
// verification (here: every pass) notices the missing events and rebuilds it.
func TestRelayRebuildsAnEmptiedStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.appendEvents(t, 5, persist.EventInput{})
	ch, _, _ := b.start(t, func(c *streams.RelayConfig) { c.VerifyInterval = time.Nanosecond })
	ch.waitFor(t, 5)
	s, err := b.js.Stream(context.Background(), streams.StreamName(b.ws.ID))
	require.NoError(t, err)
	require.NoError(t, s.Purge(context.Background()))
	b.appendEvents(t, 1, persist.EventInput{})
	ch.waitFor(t, 0)
	ch.waitFor(t, 6)
	b.requireMirror(t)
}

// TestRelayAppliesPrunes prunes the log under a running relay and before a relay ever ran: the
// stream's first sequence follows the oldest retained cursor.
func TestRelayAppliesPrunes(t *testing.T) {
	t.Parallel()
	prune := func(t *testing.T, b *relayBundle, keep int64) {
		ctx := context.Background()
		res, err := persist.WithTxV(ctx, b.store, func(tx *persist.Tx) (persist.EventPruneResult, error) {
			return tx.EventPrune(ctx, b.ws.ID, persist.EventPruneParams{KeepLatest: &keep})
		})
		require.NoError(t, err)
		require.Positive(t, res.Deleted)
	}
	t.Run("UnderARunningRelay", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.appendEvents(t, 10, persist.EventInput{})
		ch, _, _ := b.start(t, func(c *streams.RelayConfig) { c.PollInterval = 20 * time.Millisecond })
		ch.waitFor(t, 10)
		prune(t, b, 6)
		ch.waitFor(t, 10)
		b.requireMirror(t)
		state, _ := b.streamState(t)
		require.Equal(t, uint64(5), state.FirstSeq)
	})
	t.Run("BeforeTheRelayRan", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.appendEvents(t, 10, persist.EventInput{})
		prune(t, b, 2)
		ch, _, _ := b.start(t, nil)
		ch.waitFor(t, 10)
		b.requireMirror(t)
		state, _ := b.streamState(t)
		require.Equal(t, uint64(9), state.FirstSeq)
	})
}

// TestRelayOneOwnerAcrossReplicas runs two relays on one database: the second owns nothing
// while the first holds every shard, and takes over when the first stops.
func TestRelayOneOwnerAcrossReplicas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.appendEvents(t, 1, persist.EventInput{})
	first, r1, stop1 := b.start(t, nil)
	first.waitFor(t, 1)
	second, r2, stop2 := b.start(t, func(c *streams.RelayConfig) { c.ClaimInterval = 20 * time.Millisecond })
	b.appendEvents(t, 1, persist.EventInput{})
	first.waitFor(t, 2)
	stop1()
	require.Equal(t, 4, r1.OwnedShards())
	b.appendEvents(t, 1, persist.EventInput{})
	second.waitFor(t, 3)
	stop2()
	// The first relay's locks end when its backend notices the closed connection, shard by
	// shard, so the second may not have claimed all four yet; it holds the workspace's.
	require.Positive(t, r2.OwnedShards())
	close(second)
	for c := range second {
		require.Equal(t, int64(3), c, "the second relay relayed while the first owned the workspace")
	}
	b.requireMirror(t)
}

func TestRedactURLs(t *testing.T) {
	t.Parallel()
	require.Equal(t, "nats://redacted@a:4222,nats://b:4222,tls://redacted@c:4222",
		streams.RedactURLs("nats://natter:s3cret@a:4222, nats://b:4222,tls://tok@c:4222"))
}

// groupEvent is a group commit's answer for the test: the event it appended.
type groupEvent struct{ e persist.Event }

func (g *groupEvent) EachEvent(place func(*persist.Event)) { place(&g.e) }

// TestRelayPublishesHandedOffEvents: events of group commits (posts' path) are handed to the
// relay after their commit and published without being read back; plain transactions' events,
// committed in between, are read from the log. Either way the stream mirrors the log byte for
// byte, sequence == cursor, DM events with their members.
func TestRelayPublishesHandedOffEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dm := persisttest.DM(t, b.store, b.ws.ID, b.owner.ID)
	channel := persisttest.Channel(t, b.store, persist.ActorFor(b.owner), b.ws.ID, "general")
	ch, r, _ := b.start(t, nil)
	ch.waitFor(t, b.head(t))
	ctx := context.Background()
	scopes := []persist.EventInput{{ChannelID: channel.ID, Type: "message.created"},
		{DirectConversationID: dm, Type: "message.created"}, {Type: "workspace.updated"}}
	appendEvent := func(i int, group bool) error {
		in := scopes[i%len(scopes)]
		in.WorkspaceID, in.ActorID, in.Payload = b.ws.ID, b.owner.ID, map[string]any{"i": i, "text": "<é & \u2028>"}
		if !group {
			return b.store.WithTx(ctx, func(tx *persist.Tx) error {
				_, err := tx.EventAppend(ctx, in)
				return err
			})
		}
		_, err := persist.Batch[groupEvent](ctx, b.store, b.ws.ID, func(tx *persist.Tx) (groupEvent, error) {
			e, err := tx.EventAppend(ctx, in)
			return groupEvent{e}, err
		})
		return err
	}

	// One group at a time: each is handed off before its wake-up, so the pass it wakes takes it
	// from the hand-off.
	for i := range 6 {
		require.NoError(t, appendEvent(i, true))
		ch.waitFor(t, b.head(t))
	}
	require.Equal(t, 6.0, counterValue(t, r, "natter_relay_handed_off_total"))

	// Groups and plain transactions at once, in any order.
	var g errgroup.Group
	for i := range 60 {
		g.Go(func() error { return appendEvent(i, i%10 != 9) })
	}
	require.NoError(t, g.Wait())
	ch.waitFor(t, b.head(t))
	b.requireMirror(t)
	require.LessOrEqual(t, counterValue(t, r, "natter_relay_handed_off_total"), 6.0+54, "only group commits hand events off")
}

func (b *relayBundle) head(t *testing.T) int64 {
	t.Helper()
	events := b.log(t)
	return events[len(events)-1].Cursor
}

// counterValue reads one of the relay's counters by name.
func counterValue(t *testing.T, r *streams.Relay, name string) float64 {
	t.Helper()
	for _, c := range r.Collectors() {
		descs := make(chan *prometheus.Desc, 4)
		c.Describe(descs)
		if !strings.Contains((<-descs).String(), `"`+name+`"`) {
			continue
		}
		var m dto.Metric
		require.NoError(t, c.(prometheus.Metric).Write(&m))
		return m.GetCounter().GetValue()
	}
	t.Fatalf("no counter %s", name)
	return 0
}
