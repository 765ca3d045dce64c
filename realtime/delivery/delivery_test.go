package delivery

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
	"github.com/natterchat/natter/streams/streamstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// subscribed is a workspace with a bot's event subscription to types, on embedded NATS.
type subscribed struct {
	store *persist.Store
	nc    *nats.Conn
	js    jetstream.JetStream
	ws    persist.Workspace
	actor persist.Actor
	sub   persist.EventSubscription
}

func newSubscribed(t *testing.T, types ...string) subscribed {
	t.Helper()
	ctx := context.Background()
	f := subscribed{store: persisttest.NewStore(t)}
	_, f.nc = streamstest.Embedded(t)
	owner := persisttest.User(t, f.store, nil)
	f.ws = persisttest.Workspace(t, f.store, owner.ID)
	bot, _ := persisttest.Bot(t, f.store, owner, f.ws.ID, nil)
	f.actor = persist.ActorFor(owner)
	var err error
	f.sub, err = persist.WithTxV(ctx, f.store, func(tx *persist.Tx) (persist.EventSubscription, error) {
		inst, err := tx.AppInstallationCreate(ctx, f.actor, f.ws.ID, persist.AppInstallationCreateParams{AppSlug: "a", BotUserID: bot.ID})
		if err != nil {
			return persist.EventSubscription{}, err
		}
		return tx.EventSubscriptionCreate(ctx, f.actor, f.ws.ID, persist.EventSubscriptionCreateParams{
			AppInstallationID: inst.Installation.ID, EventTypes: types, CallbackURL: "https://hooks.example.com/x"})
	})
	require.NoError(t, err)
	f.js, err = jetstream.New(f.nc)
	require.NoError(t, err)
	return f
}

// deliverer is a Deliverer of the fixture, not running: the test calls sync. Its followers
// report on the channel when they start consuming.
func (f subscribed) deliverer(t *testing.T) (*Deliverer, chan string) {
	t.Helper()
	client, err := outbound.NewCallbackClient(outbound.CallbackConfig{})
	require.NoError(t, err)
	consuming := make(chan string, 4)
	d, err := New(Config{Store: f.store, NATS: f.nc, Callbacks: client, Logger: slog.New(slog.DiscardHandler),
		OnConsuming: func(id string) { consuming <- id }})
	require.NoError(t, err)
	return d, consuming
}

// TestConsumersFollowSubscriptions: a sync gives each active subscription its durable consumer
// and removes the consumer of a revoked one, recording that it is gone.
func TestConsumersFollowSubscriptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSubscribed(t, "*")
	store, ws, actor, sub, js := f.store, f.ws, f.actor, f.sub, f.js
	d, consuming := f.deliverer(t)
	defer d.stopAll()

	// Before the relay created the workspace's stream the subscription's follower waits for it,
	// and makes no consumer.
	d.sync(ctx)
	require.Contains(t, d.running, sub.ID)
	_, err := js.Consumer(ctx, streams.StreamName(ws.ID), ConsumerName(sub.ID))
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: streams.StreamName(ws.ID), Subjects: []string{streams.EventsSubjects(ws.ID)}})
	require.NoError(t, err)
	select {
	case id := <-consuming:
		require.Equal(t, sub.ID, id)
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not start once the stream existed")
	}
	_, err = js.Consumer(ctx, streams.StreamName(ws.ID), ConsumerName(sub.ID))
	require.NoError(t, err)

	_, err = persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.EventSubscription, error) {
		return tx.EventSubscriptionRevoke(ctx, actor, sub.ID)
	})
	require.NoError(t, err)
	d.sync(ctx)
	require.Empty(t, d.running)
	_, err = js.Consumer(ctx, streams.StreamName(ws.ID), ConsumerName(sub.ID))
	require.True(t, errors.Is(err, jetstream.ErrConsumerNotFound), "%v", err)
	left, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.SubscriptionConsumer, error) {
		return tx.SubscriptionConsumers(ctx)
	})
	require.NoError(t, err)
	for _, c := range left {
		require.NotEqual(t, sub.ID, c.ID, "the removal was not recorded")
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	_, err := New(Config{})
	require.Error(t, err)
}

// TestConsumerTakesOnlySubscribedTypes: a subscription's durable consumer is filtered by its
// event types, in every scope, so JetStream never hands it an event it would not deliver; a
// consumer made without the filter (an older release) is given it.
func TestConsumerTakesOnlySubscribedTypes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSubscribed(t, "reaction.added", "workspace.updated")
	ws, sub, js := f.ws, f.sub, f.js
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: streams.StreamName(ws.ID), Subjects: []string{streams.EventsSubjects(ws.ID)}})
	require.NoError(t, err)
	// As an older release left it: a durable consumer of every event.
	_, err = stream.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: ConsumerName(sub.ID), AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: 30 * time.Second, MaxAckPending: 1})
	require.NoError(t, err)

	d, consuming := f.deliverer(t)
	d.sync(ctx)
	select {
	case <-consuming:
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not start")
	}
	d.stopAll() // the durable consumer stays; what it would be handed is now countable

	var want []string
	for _, e := range []persist.Event{
		{Type: "message.created", ChannelID: "chn_1"}, {Type: "message.created", DirectConversationID: "dm_1"},
		{Type: "reaction.added", ChannelID: "chn_1"}, {Type: "reaction.added", DirectConversationID: "dm_1"},
		{Type: "reaction.removed", ChannelID: "chn_1"}, {Type: "workspace.updated"}, {Type: "member.removed"},
	} {
		e.WorkspaceID = ws.ID
		_, err := js.Publish(ctx, streams.EventSubject(e), []byte(`{}`))
		require.NoError(t, err)
		if e.Type == "reaction.added" || e.Type == "workspace.updated" {
			want = append(want, streams.EventSubject(e))
		}
	}
	// Taken from the consumer as the follower would, not read off its pending count, which
	// the server brings up to date after it acknowledges a publish.
	cons, err := stream.Consumer(ctx, ConsumerName(sub.ID))
	require.NoError(t, err)
	var got []string
	for range want {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		require.NoError(t, err)
		for m := range batch.Messages() {
			got = append(got, m.Subject())
			require.NoError(t, m.DoubleAck(ctx))
		}
	}
	rest, err := cons.FetchNoWait(1)
	require.NoError(t, err)
	for m := range rest.Messages() {
		got = append(got, m.Subject())
	}
	require.Equal(t, want, got, "two reactions and the workspace update, no other type")
}

func TestSubscribedTypes(t *testing.T) {
	t.Parallel()
	require.Nil(t, subscribedTypes([]string{"message.created", "*"}), "every type: no filter")
	require.Equal(t, []string{"message.created", "reaction.added"},
		subscribedTypes([]string{"reaction.added", "message.created", "reaction.added"}), "each once")
}
