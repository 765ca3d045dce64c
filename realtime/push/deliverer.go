package push

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"net/http"
	"net/url"

	webpushlib "github.com/SherClockHolmes/webpush-go"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/streams"
)

// Config configures the deliverer.
type Config struct {
	// Store is the database. Required.
	Store *persist.Store
	// NATS is the connection the workspace streams are read from. Required.
	NATS *nats.Conn
	// Logger receives one line per dropped push, per failure and per minute of queue overflow.
	// Default slog.Default().
	Logger *slog.Logger
	// Policy decides which addresses push services may be reached at: it sees every address a
	// host name resolves to, just before the connection is made, so a name that resolves (or
	// re-resolves) into the deployment's own network is refused. Default outbound.PublicOnly.
	Policy outbound.Policy
	// RootCAs replaces the system's certificate roots for push services. Default nil (system).
	RootCAs *x509.CertPool
	// Subscriber is the VAPID contact ("sub"): an https URL or an email address. Default
	// "mailto:webpush@natter.invalid"; set it to the deployment's public URL.
	Subscriber string
	// QueueSize bounds the pushes waiting in memory; more are dropped and counted. Default 1024.
	QueueSize int
	// Workers is how many pushes are sent at once. Default 4.
	Workers int
	// SendTimeout bounds one push service call (connect, TLS, answer). Default 10s.
	SendTimeout time.Duration
	// ShutdownGrace is how long pushes in flight may finish once the deliverer stops. Default 5s.
	ShutdownGrace time.Duration
	// DiscoverInterval is how often new workspace streams are looked for. Default 2s.
	DiscoverInterval time.Duration
	// StartWindow is how far back a workspace's consumer starts when it is first created, so
	// the first messages of a new workspace are not missed while history is not replayed.
	// Default 1m.
	StartWindow time.Duration
	// TTL is how long a push service keeps an undelivered push, in seconds. Default 86400.
	TTL int
	// PushoverToken is the operator's Pushover application token. When set, people who enabled
	// Pushover with a user key are notified through it too, on the same messages and rules as
	// their devices. Default "" (Pushover off).
	PushoverToken string
	// PushoverAPI is the message API's URL; tests point it at a fake. Default DefaultPushoverAPI.
	PushoverAPI string
	// BeforeSend, when set, is called by a worker with each push just before its re-check: a
	// seam for tests that change the world between queueing and sending. Default nil.
	BeforeSend func(Push)
	// OnQueued, when set, is called with every push that entered the queue: a test signal. It
	// must not block. Default nil.
	OnQueued func(Push)
	// OnDone, when set, is called with every push's outcome (overflow included): a test signal.
	// It must not block. Default nil.
	OnDone func(Push, Outcome)
}

// Push is one notification for one device, as queued: the title is fixed here; the body is read
// at send time.
type Push struct {
	persist.PushTarget
	WorkspaceID string
	MessageID   string
	Title       string
	Tag         string
	URL         string
}

// Outcome is what became of a push.
type Outcome struct {
	// Dropped is why the push was not sent: a persist.PushDrop… reason, or DropQueueFull,
	// DropShutdown. Empty when it was sent.
	Dropped string
	// Status is the push service's answer (0 when none came).
	Status int
	// Result is "delivered", "gone" (404/410: the device was deleted) or "failed" (backed off)
	// for a push that was sent.
	Result string
	// BackoffUntil is the end of the device's backoff after a failure.
	BackoffUntil time.Time
}

// Reasons a push is dropped before its re-check.
const (
	DropQueueFull = "queue_full"
	DropShutdown  = "shutdown"
)

// consumerName is the durable consumer of each workspace stream, shared by every replica so
// that each event is handled once.
const consumerName = "natter_push"

// Deliverer turns new messages into pushes: a durable consumer per workspace stream selects the
// recipients' devices and queues one push each, and a worker pool re-checks and sends them.
type Deliverer struct {
	cfg     Config
	logger  *slog.Logger
	queue   chan Push
	sender  *sender
	metrics delivererMetrics

	mu           sync.Mutex
	overflow     int64 // pushes dropped for a full queue since the last log line
	overflowLog  time.Time
	overflowSeen int64 // every overflow drop, for tests and metrics
}

type delivererMetrics struct {
	outcomes *prometheus.CounterVec
	overflow prometheus.Counter
	queued   prometheus.Counter
}

// New validates cfg and applies its defaults.
func New(cfg Config) (*Deliverer, error) {
	if cfg.Store == nil || cfg.NATS == nil {
		return nil, errors.New("webpush: Config.Store and Config.NATS are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Policy == nil {
		cfg.Policy = outbound.PublicOnly
	}
	if cfg.Subscriber == "" {
		cfg.Subscriber = "mailto:webpush@natter.invalid"
	}
	defaults := []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.SendTimeout, 10 * time.Second}, {&cfg.ShutdownGrace, 5 * time.Second},
		{&cfg.DiscoverInterval, 2 * time.Second}, {&cfg.StartWindow, time.Minute}}
	for _, d := range defaults {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < 0 {
			return nil, fmt.Errorf("webpush: durations must be positive, not %s", *d.v)
		}
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = 1024
	}
	if cfg.Workers == 0 {
		cfg.Workers = 4
	}
	if cfg.TTL == 0 {
		cfg.TTL = 86400
	}
	if cfg.PushoverAPI == "" {
		cfg.PushoverAPI = DefaultPushoverAPI
	}
	if cfg.PushoverToken != "" && !ValidPushoverToken(cfg.PushoverToken) {
		return nil, errors.New("webpush: Config.PushoverToken must be a Pushover application token (30 letters and digits)")
	}
	if cfg.QueueSize < 1 || cfg.Workers < 1 || cfg.TTL < 0 {
		return nil, fmt.Errorf("webpush: Config.QueueSize (%d) and Config.Workers (%d) must be at least 1, Config.TTL (%d) not negative",
			cfg.QueueSize, cfg.Workers, cfg.TTL)
	}
	logger := cfg.Logger.With("component", "webpush")
	d := &Deliverer{cfg: cfg, logger: logger, queue: make(chan Push, cfg.QueueSize),
		metrics: delivererMetrics{
			outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "natter_push_outcomes_total",
				Help: "Pushes by outcome: delivered, gone, failed, or the reason they were dropped."}, []string{"outcome"}),
			overflow: prometheus.NewCounter(prometheus.CounterOpts{Name: "natter_push_queue_overflow_total",
				Help: "Pushes dropped because the in-memory queue was full."}),
			queued: prometheus.NewCounter(prometheus.CounterOpts{Name: "natter_push_queued_total",
				Help: "Pushes queued for sending."}),
		}}
	// Every outcome is exposed from the start, at zero, so that the series exist before the
	// first push.
	for _, label := range []string{"delivered", "gone", "failed", DropQueueFull, DropShutdown, "check_failed", "payload",
		persist.PushDropDisabled, persist.PushDropDeviceGone, persist.PushDropSessionEnded, persist.PushDropKeyRetired,
		persist.PushDropBackoff, persist.PushDropMessageDeleted, persist.PushDropNotReadable, persist.PushDropNotSelected,
		persist.PushDropPushoverOff} {
		d.metrics.outcomes.WithLabelValues(label)
	}
	d.sender = &sender{client: newClient(cfg.Policy, cfg.RootCAs, cfg.SendTimeout),
		subscriber: cfg.Subscriber, ttl: cfg.TTL}
	return d, nil
}

// Collectors are the deliverer's metrics, for the server's registry.
func (d *Deliverer) Collectors() []prometheus.Collector {
	return []prometheus.Collector{d.metrics.outcomes, d.metrics.overflow, d.metrics.queued}
}

// Overflowed counts the pushes dropped so far because the queue was full.
func (d *Deliverer) Overflowed() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.overflowSeen
}

// Run delivers until ctx ends: it keeps a consumer on every workspace stream and runs the
// workers. At the end, consumers stop first, pushes still queued are dropped, and pushes in
// flight get ShutdownGrace to finish.
func (d *Deliverer) Run(ctx context.Context) error {
	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()
	var workers sync.WaitGroup
	for range d.cfg.Workers {
		workers.Go(func() { d.work(ctx, sendCtx) })
	}
	// Every workspace stream gets a follower while it exists (streams.Discover hears of new
	// ones); followers stop first when ctx ends.
	followCtx, stopFollowing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopFollowing()
	var followers sync.WaitGroup
	discovered := make(chan struct{})
	go func() {
		defer close(discovered)
		err := streams.Discover(followCtx, streams.DiscoverConfig{NATS: d.cfg.NATS, Store: d.cfg.Store, Rescan: d.cfg.DiscoverInterval,
			Logger: d.logger, Found: streams.FollowEach(followCtx, &followers, func(ws string) { d.follow(followCtx, ctx, ws) })})
		if err != nil {
			d.logger.Error("push cannot discover workspace streams", "error", err)
		}
	}()
	<-ctx.Done()
	stopFollowing()
	<-discovered // no follower starts after this
	grace := time.AfterFunc(d.cfg.ShutdownGrace, cancelSends)
	defer grace.Stop()
	stopped := make(chan struct{})
	go func() { followers.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-sendCtx.Done():
	}
	workers.Wait()
	<-stopped
	d.sender.client.CloseIdleConnections()
	for {
		select {
		case p := <-d.queue:
			d.done(p, Outcome{Dropped: DropShutdown})
		default:
			return nil
		}
	}
}

// follow runs the workspace's durable consumer of new messages and thread replies (created
// StartWindow back, so a new workspace's first messages are not missed while history is not
// replayed) until followCtx ends or the stream is retired. Events go to a goroutine that takes them in batches, so a
// burst of posts is settled with one query when nobody in the workspace can be pushed to.
func (d *Deliverer) follow(followCtx, runCtx context.Context, ws string) {
	in := make(chan streams.Msg, consumeBatch)
	batched := make(chan struct{})
	go func() {
		defer close(batched)
		d.handleBatches(runCtx, ws, in)
	}()
	err := streams.Follow(followCtx, streams.FollowConfig{NATS: d.cfg.NATS, WorkspaceID: ws,
		Durable: consumerName, Description: "Natter web push: new messages and thread replies",
		Types: []string{"message.created", "thread.reply_created"},
		Start: func(context.Context) (streams.Start, error) {
			return streams.Start{Since: time.Now().Add(-d.cfg.StartWindow)}, nil
		},
		AckWait: 30 * time.Second, MaxDeliver: 5, MaxAckPending: 256, Logger: d.logger, WhileStreamExists: true,
		Handle: func(_ context.Context, m streams.Msg) { in <- m }})
	if err != nil {
		d.logger.Error("push cannot follow a workspace stream", "workspace_id", ws, "error", err)
	}
	close(in)
	<-batched
}

// consumeBatch bounds the messages the push consumer settles at once.
const consumeBatch = 256

// handleBatches takes the follower's events as they come, as many at a time as are waiting,
// until in is closed.
func (d *Deliverer) handleBatches(ctx context.Context, ws string, in <-chan streams.Msg) {
	for {
		m, ok := <-in
		if !ok {
			return
		}
		batch := []streams.Msg{m}
		for more := true; more && len(batch) < consumeBatch; {
			select {
			case m, ok := <-in:
				if !ok {
					more = false
					break
				}
				batch = append(batch, m)
			default:
				more = false
			}
		}
		d.handleBatch(ctx, ws, batch)
	}
}

// handleBatch settles a batch of one workspace's new messages: all at once when no member has a
// device (nor Pushover, when it is on), else one by one.
func (d *Deliverer) handleBatch(ctx context.Context, ws string, batch []streams.Msg) {
	targets, err := persist.ReadV(ctx, d.cfg.Store, func(tx *persist.Reader) (bool, error) {
		return tx.PushTargetsInWorkspace(ctx, ws, d.cfg.PushoverToken != "")
	})
	if err == nil && !targets {
		for _, m := range batch {
			m.Ack()
		}
		return
	}
	for _, m := range batch {
		d.handle(ctx, m)
	}
}

// selection is what PushRecipients found for one message.
type selection struct {
	message persist.PushMessage
	targets []persist.PushTarget
}

// handle turns one message.created or thread.reply_created into queued pushes.
func (d *Deliverer) handle(ctx context.Context, m streams.Msg) {
	ids, err := m.IDs()
	if err != nil || ids.MessageID == "" {
		d.logger.Warn("push drops an event it cannot read", "workspace_id", m.WorkspaceID, "cursor", m.Cursor, "error", err)
		m.Term()
		return
	}
	env := struct{ WorkspaceID, MessageID string }{m.WorkspaceID, ids.MessageID}
	sel, err := persist.ReadV(ctx, d.cfg.Store, func(tx *persist.Reader) (selection, error) {
		pm, t, err := tx.PushRecipients(ctx, env.WorkspaceID, env.MessageID, d.cfg.PushoverToken != "")
		return selection{pm, t}, err
	})
	if e, ok := persist.ErrorOf(err); ok && e.Code == persist.CodeNotFound {
		m.Ack() // the message (or its workspace) is gone: nobody to tell
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			d.logger.Warn("push cannot select recipients", "workspace_id", env.WorkspaceID, "message_id", env.MessageID, "error", err)
		}
		m.Nak(5 * time.Second)
		return
	}
	pm := sel.message
	title, url := Title(pm.AuthorName, pm.ChannelName), URL(pm)
	for _, t := range sel.targets {
		d.enqueue(Push{PushTarget: t, WorkspaceID: pm.WorkspaceID, MessageID: pm.MessageID, Title: title, Tag: pm.MessageID, URL: url})
	}
	m.Ack()
}

// enqueue queues a push without ever blocking the consumer: when the queue is full the push is
// dropped, counted, and reported in one log line per minute.
func (d *Deliverer) enqueue(p Push) {
	select {
	case d.queue <- p:
		d.metrics.queued.Inc()
		if d.cfg.OnQueued != nil {
			d.cfg.OnQueued(p)
		}
		return
	default:
	}
	d.metrics.overflow.Inc()
	d.mu.Lock()
	d.overflow++
	d.overflowSeen++
	now := time.Now()
	var n int64
	if now.Sub(d.overflowLog) >= time.Minute {
		n, d.overflow, d.overflowLog = d.overflow, 0, now
	}
	d.mu.Unlock()
	if n > 0 {
		d.logger.Warn("push queue full; pushes dropped", "dropped", n, "queue_size", d.cfg.QueueSize)
	}
	d.done(p, Outcome{Dropped: DropQueueFull})
}

// work sends queued pushes until ctx ends; a push in flight then finishes under sendCtx, which
// the shutdown cancels after the grace period.
func (d *Deliverer) work(ctx, sendCtx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-d.queue:
			if ctx.Err() != nil {
				d.done(p, Outcome{Dropped: DropShutdown})
				return
			}
			if d.cfg.BeforeSend != nil {
				d.cfg.BeforeSend(p)
			}
			d.done(p, d.deliver(sendCtx, p))
		}
	}
}

func (d *Deliverer) done(p Push, o Outcome) {
	label := o.Result
	if o.Dropped != "" {
		label = o.Dropped
	}
	d.metrics.outcomes.WithLabelValues(label).Inc()
	if d.cfg.OnDone != nil {
		d.cfg.OnDone(p, o)
	}
}

// deliver re-checks a push, sends it, and records the push service's answer.
func (d *Deliverer) deliver(ctx context.Context, p Push) Outcome {
	if p.Pushover {
		return d.deliverPushover(ctx, p)
	}
	store := d.cfg.Store
	check, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (sendCheck, error) {
		s, reason, err := tx.PushSendCheck(ctx, p.PushTarget, p.MessageID)
		return sendCheck{s, reason}, err
	})
	if err != nil {
		d.logger.Warn("push re-check failed; dropped", "workspace_id", p.WorkspaceID, "message_id", p.MessageID,
			"user_id", p.UserID, "device_id", p.DeviceID, "error", err)
		return Outcome{Dropped: "check_failed"}
	}
	if check.reason != "" {
		d.logger.Info("push dropped", "reason", check.reason, "workspace_id", p.WorkspaceID, "message_id", p.MessageID,
			"user_id", p.UserID, "device_id", p.DeviceID)
		return Outcome{Dropped: check.reason}
	}
	s := check.send
	body, err := Payload{UserID: p.UserID, Title: p.Title, Body: s.Body, Tag: p.Tag, URL: p.URL}.Encode()
	if err != nil {
		d.logger.Error("push payload refused", "message_id", p.MessageID, "error", err)
		return Outcome{Dropped: "payload"}
	}
	status, wait, sendErr := d.sender.send(ctx, s, body)
	o := Outcome{Status: status}
	err = store.WithTx(context.WithoutCancel(ctx), func(tx *persist.Tx) error {
		switch {
		case sendErr == nil && status >= 200 && status < 300:
			o.Result = "delivered"
			return tx.PushDeviceDelivered(ctx, s.DeviceID, s.Version)
		case sendErr == nil && (status == 404 || status == 410):
			o.Result = "gone"
			return tx.PushDeviceGone(ctx, s.DeviceID, s.Version)
		default:
			o.Result = "failed"
			until, err := tx.PushDeviceFailed(ctx, s.DeviceID, s.Version, wait(tx.Now()))
			o.BackoffUntil = until
			return err
		}
	})
	if err != nil {
		d.logger.Warn("push outcome not recorded", "device_id", s.DeviceID, "error", err)
	}
	switch o.Result {
	case "gone":
		d.logger.Info("push device gone; deleted", "status", status, "user_id", p.UserID, "device_id", s.DeviceID)
	case "failed":
		d.logger.Warn("push failed; device backed off", "status", status, "user_id", p.UserID, "device_id", s.DeviceID,
			"backoff_until", o.BackoffUntil, "error", sendErr)
	}
	return o
}

// sendCheck is the result of PushSendCheck.
type sendCheck struct {
	send   persist.PushSend
	reason string
}

// sender makes the push service call.
type sender struct {
	client     *http.Client
	subscriber string
	ttl        int
}

// send encrypts body for the device (RFC 8291), signs the request with the server key (RFC
// 8292) and posts it. It returns the service's status and, for the backoff, a function of "now"
// giving the wait its Retry-After asks for. The endpoint never appears in errors or logs.
func (s *sender) send(ctx context.Context, p persist.PushSend, body []byte) (int, func(time.Time) time.Duration, error) {
	none := func(time.Time) time.Duration { return 0 }
	resp, err := webpushlib.SendNotificationWithContext(ctx, body,
		&webpushlib.Subscription{Endpoint: p.Endpoint, Keys: webpushlib.Keys{P256dh: p.P256dh, Auth: p.Auth}},
		&webpushlib.Options{HTTPClient: s.client, Subscriber: s.subscriber, TTL: s.ttl, Urgency: webpushlib.UrgencyHigh,
			VAPIDPublicKey: p.Key.PublicKey, VAPIDPrivateKey: p.Key.PrivateKey})
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL is the endpoint: a capability, kept out of logs
		}
		return 0, none, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	h := resp.Header.Get("Retry-After")
	return resp.StatusCode, func(now time.Time) time.Duration { return retryAfter(h, now) }, nil
}
