package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/streams"
)

// Config configures a Deliverer.
type Config struct {
	// Store holds the subscriptions and their attempts. Required.
	Store *persist.Store
	// NATS is the connection whose JetStream holds the workspace streams. Required.
	NATS *nats.Conn
	// Callbacks makes the signed calls. Required.
	Callbacks *outbound.CallbackClient
	// Logger receives problems. Default slog.Default().
	Logger *slog.Logger
	// SyncInterval is how often consumers are matched to the subscriptions: new ones start,
	// those of revoked subscriptions are removed. Deliveries begin after the log's head at
	// creation whatever the delay. Default 1s.
	SyncInterval time.Duration
	// OnAttempt, when set, is called after each stored attempt: a signal for tests. It must
	// not block. Default nil.
	OnAttempt func(persist.EventDeliveryAttempt)
	// OnConsuming, when set, is called each time a subscription's consumer starts on this node
	// (its stream exists): a signal for tests. It must not block. Default nil.
	OnConsuming func(subscriptionID string)
	// AckWait is how long an event handed to a replica stays its own without word from it.
	// While a delivery is under way its replica says so every AckWait/3, so only a replica that
	// died (crashed, killed, cut off) lets it lapse, and its event goes to the next consumer (a
	// restarted process or another replica) that soon after. Default 5s.
	AckWait time.Duration
}

// defaultAckWait is Config.AckWait's default: a crash delays the subscription this long at most.
const defaultAckWait = 5 * time.Second

// Deliverer runs the subscriptions' consumers. Every replica may run one: replicas share each
// durable consumer, which hands every event to one of them, one at a time.
type Deliverer struct {
	cfg    Config
	logger *slog.Logger

	mu      sync.Mutex
	running map[string]*consumer // by subscription id
}

// consumer is a subscription's follower on this node.
type consumer struct {
	workspaceID string
	stop        context.CancelFunc
	done        chan struct{} // closed when the follower returned
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
	if cfg.AckWait == 0 {
		cfg.AckWait = defaultAckWait
	}
	if cfg.AckWait < 30*time.Millisecond {
		return nil, fmt.Errorf("delivery: Config.AckWait must be at least 30ms, not %s", cfg.AckWait)
	}
	return &Deliverer{cfg: cfg, logger: cfg.Logger.With("component", "delivery"), running: map[string]*consumer{}}, nil
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
		c.stop()
	}
	for _, c := range running {
		<-c.done
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

// start follows a subscription's durable consumer on this node (streams.Follow), created
// after the last handled cursor when it does not exist yet; a workspace whose stream the relay
// has not created yet is waited for. ctx is the run's: a delivery under way when the follower
// stops finishes first.
func (d *Deliverer) start(ctx context.Context, s persist.SubscriptionConsumer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.running[s.ID]; ok {
		return nil
	}
	id := s.ID
	fctx, stop := context.WithCancel(ctx)
	c := &consumer{workspaceID: s.WorkspaceID, stop: stop, done: make(chan struct{})}
	cfg := streams.FollowConfig{
		NATS: d.cfg.NATS, WorkspaceID: s.WorkspaceID, Durable: ConsumerName(id), Description: "event subscription " + id,
		// After the last handled cursor; a redelivered cursor is refused by the plan anyway.
		Start:   func(context.Context) (streams.Start, error) { return streams.Start{After: s.Resume}, nil },
		AckWait: d.cfg.AckWait, MaxAckPending: 1, PullMaxMessages: 1, // one event at a time, in cursor order
		// Types not subscribed to never reach the plan: JetStream leaves them out (before, each
		// was a transaction that wrote, for every subscription of the workspace).
		Types: subscribedTypes(s.EventTypes), WorkspaceWide: true,
		Handle: func(_ context.Context, m streams.Msg) { d.handle(ctx, id, m) },
		Logger: d.logger.With("subscription_id", id),
	}
	if d.cfg.OnConsuming != nil {
		cfg.OnLive = func(int64) { d.cfg.OnConsuming(id) }
	}
	d.running[id] = c
	go func() {
		defer close(c.done)
		if err := streams.Follow(fctx, cfg); err != nil {
			d.logger.Error("delivery cannot follow", "subscription_id", id, "error", err)
		}
	}()
	return nil
}

// subscribedTypes is the consumer's type filter of a subscription: none when it takes every type.
// Each type once: JetStream refuses filters that overlap.
func subscribedTypes(types []string) []string {
	if slices.Contains(types, persist.AllEventTypes) {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(types)))
}

// remove stops a subscription's follower here and deletes the durable consumer.
func (d *Deliverer) remove(ctx context.Context, id, workspaceID string) error {
	d.mu.Lock()
	c := d.running[id]
	delete(d.running, id)
	d.mu.Unlock()
	if c != nil {
		c.stop()
		<-c.done
	}
	return streams.DeleteDurable(ctx, d.cfg.NATS, workspaceID, ConsumerName(id))
}

// keepClaimed tells JetStream every AckWait/3 that m is still being worked on, until the
// returned stop is called (it waits for the ticker's goroutine): the short ack wait then ends a
// claim only when this replica is gone.
func (d *Deliverer) keepClaimed(m streams.Msg) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				m.InProgress()
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// delivery is the signed body of an outgoing delivery.
type delivery struct {
	SubscriptionID string          `json:"subscription_id"`
	Event          json.RawMessage `json:"event"`
}

// handle delivers one event: decide (subscription active, cursor new, type subscribed, visible
// to the bot), post once, store the attempt, acknowledge. A database failure before the post
// asks for the event again later; nothing is ever posted twice on purpose.
func (d *Deliverer) handle(ctx context.Context, subscriptionID string, m streams.Msg) {
	stop := d.keepClaimed(m)
	defer stop()
	cursor, eventType := m.Cursor, m.Type
	ids, err := m.IDs()
	if err != nil {
		d.logger.Warn("delivery drops an event it cannot read", "subscription_id", subscriptionID, "cursor", cursor, "error", err)
		m.Term()
		return
	}
	type plan struct {
		target persist.DeliveryTarget
		ok     bool
	}
	p, err := persist.WithTxV(ctx, d.cfg.Store, func(tx *persist.Tx) (plan, error) {
		t, ok, err := tx.EventDeliveryPlan(ctx, subscriptionID, cursor, m.Scope, eventType)
		return plan{t, ok}, err
	})
	if err != nil {
		if ctx.Err() == nil {
			d.logger.Warn("delivery cannot plan an event", "subscription_id", subscriptionID, "cursor", cursor, "error", err)
		}
		m.Nak(time.Second)
		return
	}
	if !p.ok {
		m.Ack()
		return
	}
	body, err := json.Marshal(delivery{SubscriptionID: subscriptionID, Event: m.Envelope})
	if err != nil {
		m.Term()
		return
	}
	started := time.Now()
	res := d.cfg.Callbacks.Post(ctx, outbound.Callback{URL: p.target.CallbackURL, Secret: p.target.SigningSecret, Body: body,
		Header: map[string]string{outbound.HeaderEventID: ids.ID}})
	if res.Err != nil && ctx.Err() != nil {
		// Shutting down: this is no verdict on the callback. The event goes to the next
		// replica or the next start.
		m.Nak(0)
		return
	}
	// The stored attempt is shown to the workspace's managers (GET …/deliveries): it keeps the
	// fixed sentence of the failure's class; the detail, which may name internal resolvers and
	// addresses, goes to the log only.
	outcome := persist.DeliveryOutcome{EventID: ids.ID, Cursor: cursor, EventType: eventType, Status: res.Status,
		Body: string(res.Body), Error: res.Failure(), StartedAt: started}
	if problem := res.Problem(); problem != "" {
		d.logger.Info("event delivery failed", "subscription_id", subscriptionID, "cursor", cursor, "error", problem)
	}
	store := context.WithoutCancel(ctx)
	a, err := persist.WithTxV(store, d.cfg.Store, func(tx *persist.Tx) (persist.EventDeliveryAttempt, error) {
		return tx.EventDeliveryRecord(store, p.target, outcome)
	})
	if err != nil {
		d.logger.Warn("delivery cannot store an attempt", "subscription_id", subscriptionID, "cursor", cursor, "error", err)
	} else if d.cfg.OnAttempt != nil {
		d.cfg.OnAttempt(a)
	}
	m.Ack()
}
