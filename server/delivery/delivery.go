package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/callback"
	"github.com/natterchat/natter/streams"
)

// Config configures a Deliverer.
type Config struct {
	// Store holds the subscriptions and their attempts. Required.
	Store *persist.Store
	// NATS is the connection whose JetStream holds the workspace streams. Required.
	NATS *nats.Conn
	// Callbacks makes the signed calls. Required.
	Callbacks *callback.Client
	// Logger receives problems. Default slog.Default().
	Logger *slog.Logger
	// SyncInterval is how often consumers are matched to the subscriptions: new ones start,
	// those of revoked subscriptions are removed. Deliveries begin after the log's head at
	// creation whatever the delay. Default 1s.
	SyncInterval time.Duration
	// OnAttempt, when set, is called after each stored attempt: a signal for tests. It must
	// not block. Default nil.
	OnAttempt func(persist.EventDeliveryAttempt)
}

// Deliverer runs the subscriptions' consumers. Every replica may run one: replicas share each
// durable consumer, which hands every event to one of them, one at a time.
type Deliverer struct {
	cfg    Config
	js     jetstream.JetStream
	logger *slog.Logger

	mu      sync.Mutex
	running map[string]*consumer // by subscription id
}

type consumer struct {
	workspaceID string
	cc          jetstream.ConsumeContext
}

// New validates cfg and applies its defaults.
func New(cfg Config) (*Deliverer, error) {
	if cfg.Store == nil || cfg.NATS == nil || cfg.Callbacks == nil {
		return nil, errors.New("delivery: Config.Store, NATS and Callbacks are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SyncInterval == 0 {
		cfg.SyncInterval = time.Second
	}
	if cfg.SyncInterval < 0 {
		return nil, fmt.Errorf("delivery: Config.SyncInterval must be positive, not %s", cfg.SyncInterval)
	}
	js, err := jetstream.New(cfg.NATS)
	if err != nil {
		return nil, fmt.Errorf("delivery: jetstream: %w", err)
	}
	return &Deliverer{cfg: cfg, js: js, logger: cfg.Logger.With("component", "delivery"), running: map[string]*consumer{}}, nil
}

// ConsumerName is the durable consumer of a subscription.
func ConsumerName(subscriptionID string) string { return "natter_sub_" + subscriptionID }

// Run keeps consumers in step with the subscriptions until ctx ends, then stops them and
// returns once no delivery is under way.
func (d *Deliverer) Run(ctx context.Context) error {
	defer d.stopAll()
	t := time.NewTicker(d.cfg.SyncInterval)
	defer t.Stop()
	for {
		d.sync(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (d *Deliverer) stopAll() {
	d.mu.Lock()
	running := d.running
	d.running = map[string]*consumer{}
	d.mu.Unlock()
	for _, c := range running {
		c.cc.Stop()
		<-c.cc.Closed()
	}
}

// sync starts consumers of active subscriptions and removes those of revoked or deleted ones.
func (d *Deliverer) sync(ctx context.Context) {
	subs, err := persist.WithTxV(ctx, d.cfg.Store, func(tx *persist.Tx) ([]persist.SubscriptionConsumer, error) {
		return tx.SubscriptionConsumers(ctx)
	})
	if err != nil {
		if ctx.Err() == nil {
			d.logger.Warn("delivery cannot list subscriptions", "error", err)
		}
		return
	}
	active := map[string]bool{}
	for _, s := range subs {
		if ctx.Err() != nil {
			return
		}
		if s.Active {
			active[s.ID] = true
			if err := d.start(ctx, s); err != nil {
				d.logger.Warn("delivery cannot start a consumer", "subscription_id", s.ID, "workspace_id", s.WorkspaceID, "error", err)
			}
			continue
		}
		if err := d.remove(ctx, s.ID, s.WorkspaceID); err != nil {
			d.logger.Warn("delivery cannot remove a consumer", "subscription_id", s.ID, "error", err)
			continue
		}
		if err := d.cfg.Store.WithTx(ctx, func(tx *persist.Tx) error { return tx.SubscriptionConsumerRemoved(ctx, s.ID) }); err != nil {
			d.logger.Warn("delivery cannot record a removed consumer", "subscription_id", s.ID, "error", err)
		}
	}
	// Subscriptions that vanished (their workspace was deleted) leave their consumers too.
	d.mu.Lock()
	var gone []string
	for id := range d.running {
		if !active[id] {
			gone = append(gone, id)
		}
	}
	d.mu.Unlock()
	for _, id := range gone {
		d.mu.Lock()
		ws := d.running[id].workspaceID
		d.mu.Unlock()
		if err := d.remove(ctx, id, ws); err != nil {
			d.logger.Warn("delivery cannot remove a consumer", "subscription_id", id, "error", err)
		}
	}
}

// start runs a subscription's consumer on this node, creating the durable consumer after the
// last handled cursor when it does not exist yet. A workspace whose stream the relay has not
// created yet is tried again at the next sync.
func (d *Deliverer) start(ctx context.Context, s persist.SubscriptionConsumer) error {
	d.mu.Lock()
	_, ok := d.running[s.ID]
	d.mu.Unlock()
	if ok {
		return nil
	}
	stream, err := d.js.Stream(ctx, streams.StreamName(s.WorkspaceID))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	cons, err := stream.Consumer(ctx, ConsumerName(s.ID))
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cons, err = stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:       ConsumerName(s.ID),
			Description:   "event subscription " + s.ID,
			DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:   uint64(s.Resume) + 1,
			AckPolicy:     jetstream.AckExplicitPolicy,
			// How long a replica's crash in the middle of a delivery holds the subscription
			// before another replica takes the event: longer than a callback may take (10s).
			AckWait:       30 * time.Second,
			MaxAckPending: 1, // one event at a time, in cursor order
		})
	}
	if err != nil {
		return err
	}
	id := s.ID
	cc, err := cons.Consume(func(m jetstream.Msg) { d.handle(ctx, id, m) }, jetstream.PullMaxMessages(1))
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.running[s.ID] = &consumer{workspaceID: s.WorkspaceID, cc: cc}
	d.mu.Unlock()
	return nil
}

// remove stops a subscription's consumer here and deletes the durable consumer.
func (d *Deliverer) remove(ctx context.Context, id, workspaceID string) error {
	d.mu.Lock()
	c := d.running[id]
	delete(d.running, id)
	d.mu.Unlock()
	if c != nil {
		c.cc.Stop()
		<-c.cc.Closed()
	}
	err := d.js.DeleteConsumer(ctx, streams.StreamName(workspaceID), ConsumerName(id))
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	return err
}

// delivery is the signed body of an outgoing delivery.
type delivery struct {
	SubscriptionID string          `json:"subscription_id"`
	Event          json.RawMessage `json:"event"`
}

// handle delivers one event: decide (subscription active, cursor new, type subscribed, visible
// to the bot), post once, store the attempt, acknowledge. A database failure before the post
// asks for the event again later; nothing is ever posted twice on purpose.
func (d *Deliverer) handle(ctx context.Context, subscriptionID string, m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		_ = m.Term()
		return
	}
	cursor := int64(meta.Sequence.Stream)
	_, scope, eventType, ok := streams.ParseSubject(m.Subject())
	if !ok {
		_ = m.Ack()
		return
	}
	type plan struct {
		target persist.DeliveryTarget
		ok     bool
	}
	p, err := persist.WithTxV(ctx, d.cfg.Store, func(tx *persist.Tx) (plan, error) {
		t, ok, err := tx.EventDeliveryPlan(ctx, subscriptionID, cursor, scope, eventType)
		return plan{t, ok}, err
	})
	if err != nil {
		if ctx.Err() == nil {
			d.logger.Warn("delivery cannot plan an event", "subscription_id", subscriptionID, "cursor", cursor, "error", err)
		}
		_ = m.NakWithDelay(time.Second)
		return
	}
	if !p.ok {
		_ = m.Ack()
		return
	}
	var envelope struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(m.Data(), &envelope)
	body, err := json.Marshal(delivery{SubscriptionID: subscriptionID, Event: m.Data()})
	if err != nil {
		_ = m.Term()
		return
	}
	started := time.Now()
	res := d.cfg.Callbacks.Post(ctx, callback.Request{URL: p.target.CallbackURL, Secret: p.target.SigningSecret, Body: body,
		Header: map[string]string{callback.HeaderEventID: envelope.ID}})
	if res.Err != nil && ctx.Err() != nil {
		// Shutting down: this is no verdict on the callback. The event goes to the next
		// replica or the next start.
		_ = m.Nak()
		return
	}
	outcome := persist.DeliveryOutcome{EventID: envelope.ID, Cursor: cursor, EventType: eventType, Status: res.Status,
		Body: string(res.Body), Error: res.Problem(), StartedAt: started}
	store := context.WithoutCancel(ctx)
	a, err := persist.WithTxV(store, d.cfg.Store, func(tx *persist.Tx) (persist.EventDeliveryAttempt, error) {
		return tx.EventDeliveryRecord(store, p.target, outcome)
	})
	if err != nil {
		d.logger.Warn("delivery cannot store an attempt", "subscription_id", subscriptionID, "cursor", cursor, "error", err)
	} else if d.cfg.OnAttempt != nil {
		d.cfg.OnAttempt(a)
	}
	_ = m.Ack()
}
