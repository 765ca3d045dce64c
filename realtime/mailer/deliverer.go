// Package mailer sends missed-activity emails: a durable consumer of every workspace stream
// queues mentions, direct messages and replies in followed threads into per-person,
// per-conversation batches in Postgres, and a sender on every replica claims the batches that
// are due, re-checks them and emails each once. See docs/notifications.md.
package mailer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/natterchat/natter/outbound/email"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/streams"
)

// Config configures the deliverer.
type Config struct {
	// Store is the database. Required.
	Store *persist.Store
	// NATS is the connection the workspace streams are read from. Required.
	NATS *nats.Conn
	// Sender is the mail relay. Required.
	Sender *email.Sender
	// PublicURL is the client's origin, which links are built on. Required.
	PublicURL string
	// Logger receives failures and dropped emails. Default slog.Default().
	Logger *slog.Logger
	// Delays are what each delay a person may choose means. Default persist.EmailDelays; tests
	// shorten them.
	Delays map[string]time.Duration
	// DiscoverInterval is how often new workspace streams are looked for. Default 2s.
	DiscoverInterval time.Duration
	// StartWindow is how far back a workspace's consumer starts when it is first created.
	// Default 1m.
	StartWindow time.Duration
	// PollInterval is the longest the sender waits before looking for due batches again; it
	// wakes earlier when it knows a batch falls due sooner. Default 5s.
	PollInterval time.Duration
	// Lease is how long a sender holds a batch it claimed; a sender that died releases it
	// after that. Default 2m.
	Lease time.Duration
	// RetryBase is the wait after the first temporary failure, doubled after each next one up
	// to 1h. Default 1m.
	RetryBase time.Duration
	// MaxAttempts bounds the submissions of one batch. Default 8.
	MaxAttempts int
	// SendTimeout bounds one submission. Default 30s.
	SendTimeout time.Duration
	// OnOutcome, when set, is called with every batch's outcome: a test signal. It must not
	// block. Default nil.
	OnOutcome func(Outcome)
}

// Outcome is what became of one claimed batch.
type Outcome struct {
	BatchID string
	UserID  string
	// Result is "sent", "cancelled" (Reason says why), "retry" or "failed".
	Result string
	Reason string
}

// consumerName is the durable consumer of each workspace stream, shared by every replica.
const consumerName = "natter_email"

// Deliverer runs the consumer and the sender.
type Deliverer struct {
	cfg    Config
	logger *slog.Logger
	wake   chan struct{}
}

// New validates cfg and applies its defaults.
func New(cfg Config) (*Deliverer, error) {
	if cfg.Store == nil || cfg.NATS == nil || cfg.Sender == nil || cfg.PublicURL == "" {
		return nil, errors.New("mailer: Config.Store, NATS, Sender and PublicURL are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Delays == nil {
		cfg.Delays = persist.EmailDelays
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.DiscoverInterval, 2 * time.Second}, {&cfg.StartWindow, time.Minute}, {&cfg.PollInterval, 5 * time.Second},
		{&cfg.Lease, 2 * time.Minute}, {&cfg.RetryBase, time.Minute}, {&cfg.SendTimeout, 30 * time.Second}} {
		if *d.v == 0 {
			*d.v = d.def
		}
		if *d.v < 0 {
			return nil, fmt.Errorf("mailer: durations must be positive, not %s", *d.v)
		}
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.Lease <= cfg.SendTimeout {
		return nil, errors.New("mailer: Config.Lease must be longer than Config.SendTimeout, or a slow send could be claimed twice")
	}
	return &Deliverer{cfg: cfg, logger: cfg.Logger.With("component", "email"), wake: make(chan struct{}, 1)}, nil
}

// Run queues and sends until ctx ends. Consumers and the sender stop together; an email being
// submitted gets its SendTimeout, and a batch it leaves unrecorded is claimed again after its
// lease.
func (d *Deliverer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { d.sendLoop(ctx) })
	var followers sync.WaitGroup
	err := streams.Discover(ctx, streams.DiscoverConfig{NATS: d.cfg.NATS, Store: d.cfg.Store, Rescan: d.cfg.DiscoverInterval,
		Logger: d.logger, Found: streams.FollowEach(ctx, &followers, func(ws string) { d.follow(ctx, ws) })})
	if err != nil && ctx.Err() == nil {
		d.logger.Error("email cannot discover workspace streams", "error", err)
	}
	<-ctx.Done()
	followers.Wait()
	wg.Wait()
	return nil
}

// follow runs the workspace's durable consumer of new messages and thread replies. An event is
// acknowledged once its batches are committed, so a replica that dies before leaves it to be
// delivered again, and queueing it again adds nothing.
func (d *Deliverer) follow(ctx context.Context, ws string) {
	err := streams.Follow(ctx, streams.FollowConfig{NATS: d.cfg.NATS, WorkspaceID: ws,
		Durable: consumerName, Description: "Natter email: new messages and thread replies",
		Types: []string{"message.created", "thread.reply_created"},
		Start: func(context.Context) (streams.Start, error) {
			return streams.Start{Since: time.Now().Add(-d.cfg.StartWindow)}, nil
		},
		AckWait: 30 * time.Second, MaxAckPending: 256, Logger: d.logger, WhileStreamExists: true,
		Handle: d.handle})
	if err != nil && ctx.Err() == nil {
		d.logger.Error("email cannot follow a workspace stream", "workspace_id", ws, "error", err)
	}
}

func (d *Deliverer) handle(ctx context.Context, m streams.Msg) {
	ids, err := m.IDs()
	if err != nil || ids.MessageID == "" {
		d.logger.Warn("email drops an event it cannot read", "workspace_id", m.WorkspaceID, "cursor", m.Cursor, "error", err)
		m.Term()
		return
	}
	n, err := persist.WithTxV(ctx, d.cfg.Store, func(tx *persist.Tx) (int, error) {
		return tx.EmailQueue(ctx, m.WorkspaceID, ids.MessageID, d.cfg.Delays)
	})
	if e, ok := persist.ErrorOf(err); ok && e.Code == persist.CodeNotFound {
		m.Ack()
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			d.logger.Warn("email cannot queue a message", "workspace_id", m.WorkspaceID, "message_id", ids.MessageID, "error", err)
		}
		m.Nak(5 * time.Second)
		return
	}
	m.Ack()
	if n > 0 {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}
