package streams

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/natterchat/natter/persist"
)

// RelayConfig configures the outbox relay.
type RelayConfig struct {
	// Store is the database the log is read from. Required.
	Store *persist.Store
	// NATS is the connection streams are published on. Required.
	NATS *nats.Conn
	// Logger receives relay problems. Default slog.Default().
	Logger *slog.Logger
	// Replicas is the replica count of new streams: 1 for the embedded server, 3 in a cluster.
	// Default 1.
	Replicas int
	// Shards is the number of ownership shards workspaces are hashed into; each is held by one
	// relay across replicas through a Postgres advisory lock. All replicas must agree. Default 16.
	Shards int
	// PollInterval is the safety-net poll for events whose wake-up was lost. Default 500ms.
	PollInterval time.Duration
	// ClaimInterval is how often a relay tries to take shards nobody holds. Default 2s.
	ClaimInterval time.Duration
	// VerifyInterval is how long a stream checked against the log is trusted; the first pass
	// after it checks again, so a stream emptied behind the relay's back is rebuilt. Default 5s.
	VerifyInterval time.Duration
	// Batch is how many events are read and published per round trip. Default 256.
	Batch int
	// RecoverStore, when set, is called when a publish went unanswered (with back-off, at most
	// every 30s): the embedded server's Embedded.RecoverStore, since its store stops taking
	// writes after a write error such as a full disk. Default nil (an external cluster).
	RecoverStore func(ctx context.Context) error
	// StallAfter is how long a workspace's events may fail to reach its stream before Health
	// reports the relay stalled. Default 10s.
	StallAfter time.Duration
	// OnHealth, when set, is called each time Health changes (stalled or not): a signal for
	// tests. It must not block. Default nil.
	OnHealth func(stalled bool)
	// RetireAfter is how long a workspace's stream stays after its last relayed event: once
	// idle that long, with no consumer on it but caught-up followers that leave with it
	// (FollowConfig.WhileStreamExists), it is deleted, and created again at the workspace's next
	// event, starting after its last cursor (docs/realtime.md). Negative keeps every stream.
	// Default 15m.
	RetireAfter time.Duration
	// StreamMaxMsgs is the most events a stream retains; older ones are discarded by JetStream
	// (Postgres keeps them). Default DefaultStreamMaxMsgs.
	StreamMaxMsgs int64
	// OnRelayed, when set, is called after a workspace's position is recorded: a signal for
	// tests and metrics. It must not block. Default nil.
	OnRelayed func(workspaceID string, cursor int64)
}

// Relay copies each workspace's committed events, in cursor order, into the workspace's
// JetStream stream so that stream sequence == cursor, and records the relayed position.
type Relay struct {
	cfg     RelayConfig
	js      jetstream.JetStream
	logger  *slog.Logger
	owned   []bool
	streams map[string]streamMark // verified streams of owned workspaces
	handoff *handoff
	private *privateChannels
	metrics relayMetrics
	health  relayHealth
	wakings wakings          // streams being created again (relaywake.go)
	woken   map[string]woken // streams created since their workspace's last pass
	// retirements are the idle streams being retired beside the loop (retire.go).
	retirements retirements
	// beforeWake, set by tests only (export_test.go), runs before a stream is created again.
	beforeWake atomic.Pointer[func(workspaceID string)]
	// beforeRetire, set by tests only, runs between a retirement's record and the deletion.
	beforeRetire atomic.Pointer[func(workspaceID string)]
}

// streamMark is what the relay knows of a stream it verified.
type streamMark struct {
	last       uint64 // the stream's last sequence
	verifiedAt time.Time
}

type relayMetrics struct {
	published prometheus.Counter
	handedOff prometheus.Counter
	rebuilds  prometheus.Counter
	retired   prometheus.Counter
	previewed prometheus.Counter
	polls     prometheus.Counter
	owned     prometheus.Gauge
}

// pollBackOff bounds the poll's back-off at rest: 8 × 500 ms by default.
const pollBackOff = 8

// DefaultStreamMaxMsgs is RelayConfig.StreamMaxMsgs's default: see docs/realtime.md for why.
const DefaultStreamMaxMsgs = 100_000

// A retirement sweep looks at up to retireBatches batches of retireBatch streams.
const (
	retireBatch   = 256
	retireBatches = 4
)

// relayLockBase is the first advisory lock key of the relay's shards ("natt" "rl" …).
const relayLockBase int64 = 0x6e617474_726c0000

// NewRelay validates cfg and applies its defaults.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if cfg.Store == nil || cfg.NATS == nil {
		return nil, errors.New("streams: RelayConfig.Store and RelayConfig.NATS are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.Replicas < 1 || cfg.Replicas > 5 {
		return nil, fmt.Errorf("streams: RelayConfig.Replicas must be 1 to 5, not %d", cfg.Replicas)
	}
	if cfg.Shards == 0 {
		cfg.Shards = 16
	}
	if cfg.Shards < 1 || cfg.Shards > 4096 {
		return nil, fmt.Errorf("streams: RelayConfig.Shards must be 1 to 4096, not %d", cfg.Shards)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 500 * time.Millisecond
	}
	if cfg.ClaimInterval == 0 {
		cfg.ClaimInterval = 2 * time.Second
	}
	if cfg.VerifyInterval == 0 {
		cfg.VerifyInterval = 5 * time.Second
	}
	if cfg.Batch == 0 {
		cfg.Batch = 256
	}
	if cfg.StallAfter == 0 {
		cfg.StallAfter = 10 * time.Second
	}
	if cfg.RetireAfter == 0 {
		cfg.RetireAfter = 15 * time.Minute
	}
	if cfg.StreamMaxMsgs == 0 {
		cfg.StreamMaxMsgs = DefaultStreamMaxMsgs
	}
	if cfg.StreamMaxMsgs < 1 {
		return nil, fmt.Errorf("streams: RelayConfig.StreamMaxMsgs must be positive, not %d", cfg.StreamMaxMsgs)
	}
	// An acknowledgement lost in a stream leader election must not hold the relay forever:
	// a publish unanswered for 5s fails, and the workspace is verified and retried.
	js, err := jetstream.New(cfg.NATS, jetstream.WithPublishAsyncMaxPending(cfg.Batch),
		jetstream.WithPublishAsyncTimeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("streams: jetstream: %w", err)
	}
	return &Relay{cfg: cfg, js: js, logger: cfg.Logger.With("component", "relay"), owned: make([]bool, cfg.Shards),
		streams: map[string]streamMark{}, wakings: newWakings(), woken: map[string]woken{}, retirements: newRetirements(), handoff: newHandoff(), private: newPrivateChannels(), health: newRelayHealth(),
		metrics: relayMetrics{
			published: prometheus.NewCounter(prometheus.CounterOpts{Name: "natter_relay_published_total",
				Help: "Events the relay published into workspace streams."}),
			handedOff: prometheus.NewCounter(prometheus.CounterOpts{Name: "natter_relay_handed_off_total",
				Help: "Events the relay published as this process's group commits handed them over, without reading them from the log."}),
			rebuilds: prometheus.NewCounter(prometheus.CounterOpts{Name: "natter_relay_stream_rebuilds_total",
				Help: "Workspace streams the relay recreated from Postgres."}),
			retired: prometheus.NewCounter(prometheus.CounterOpts{Name: "natter_relay_streams_retired_total",
				Help: "Idle workspace streams the relay deleted, to be created again at the workspace's next event."}),
			previewed: prometheus.NewCounter(prometheus.CounterOpts{Name: "natter_relay_previewed_total",
				Help: "Events of waking workspaces the relay sent to their sockets over core NATS before their streams were created."}),
			polls: prometheus.NewCounter(prometheus.CounterOpts{Name: "natter_relay_polls_total",
				Help: "Reads of every workspace's head by the relay's safety-net poll."}),
			owned: prometheus.NewGauge(prometheus.GaugeOpts{Name: "natter_relay_owned_shards",
				Help: "Relay shards this process owns."}),
		}}, nil
}

// Collectors are the relay's metrics, for the server's registry.
func (r *Relay) Collectors() []prometheus.Collector {
	return []prometheus.Collector{r.metrics.published, r.metrics.handedOff, r.metrics.rebuilds, r.metrics.retired, r.metrics.previewed, r.metrics.polls, r.metrics.owned,
		r.health.stalledGauge, r.health.backlog, r.health.recoveries}
}

// WakeRelay returns the store's OnEventsCommitted hook: a core NATS message per workspace on
// natter.relay.wake.<workspace_id>. Publishing only buffers, so it never blocks a request.
func WakeRelay(nc *nats.Conn) func(workspaceIDs []string) {
	return func(ids []string) {
		for i, id := range ids {
			if i > 0 && ids[i-1] == id {
				continue
			}
			_ = nc.Publish(wakeRoot+id, nil)
		}
	}
}

// shardOf is the ownership shard of a workspace.
func (r *Relay) shardOf(workspaceID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(workspaceID))
	return int(h.Sum32() % uint32(r.cfg.Shards))
}

// Run relays until ctx ends. It owns the shards it can lock, wakes on natter.relay.wake.* and
// polls as a safety net; a lost database connection drops every shard until it is back.
func (r *Relay) Run(ctx context.Context) error {
	wakes := make(chan *nats.Msg, 4096)
	sub, err := r.cfg.NATS.ChanSubscribe(wakeRoot+"*", wakes)
	if err != nil {
		return fmt.Errorf("relay: subscribe to wake-ups: %w", err)
	}
	// A full channel drops wake-ups (the poll catches up) instead of stalling the connection.
	_ = sub.SetPendingLimits(-1, -1)
	defer func() { _ = sub.Unsubscribe() }()
	stopHandOff := r.cfg.Store.HandOffEvents(r.handoff.offer)
	defer stopHandOff()
	var locks *persist.Locks
	defer func() {
		if locks != nil {
			_ = locks.Close(context.WithoutCancel(ctx))
		}
	}()
	// The poll backs off while wake-ups do their work: each poll that finds no workspace behind
	// but those a wake-up announced doubles the wait up to pollBackOff × PollInterval; finding
	// one that no wake-up announced (wake-ups are being lost) sets it back. Its query reads
	// every workspace's head, so with thousands of dormant workspaces it was most of Postgres's
	// work at rest, and under load (when wake-ups set it back) a share of a core.
	pollEvery := r.cfg.PollInterval
	poll := time.NewTimer(pollEvery)
	defer poll.Stop()
	polls := newPendingPoll()
	defer polls.wg.Wait()         // ctx has ended: the query returns
	defer r.wakings.wg.Wait()     // and so do the creations
	defer r.retirements.wg.Wait() // and the retirements

	claim := time.NewTimer(0)
	defer claim.Stop()
	// The retirement sweep starts a few times per idle period, at least once a minute.
	var retire <-chan time.Time
	if r.cfg.RetireAfter > 0 {
		t := time.NewTicker(min(max(r.cfg.RetireAfter/4, 10*time.Millisecond), time.Minute))
		defer t.Stop()
		retire = t.C
	}
	dirty := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-wakes:
			if id := m.Subject[len(wakeRoot):]; r.owned[r.shardOf(id)] {
				dirty[id] = true
				polls.announced[id] = true
			}
		case <-poll.C:
			polls.start(ctx, r)
		case a := <-polls.answers:
			polls.running = false
			if r.markPending(ctx, a, dirty, polls.announced) {
				pollEvery = r.cfg.PollInterval
			} else {
				pollEvery = min(2*pollEvery, pollBackOff*r.cfg.PollInterval)
			}
			poll.Reset(pollEvery)
		case <-claim.C:
			var gained bool
			locks, gained = r.claim(ctx, locks)
			claim.Reset(r.cfg.ClaimInterval)
			if gained {
				polls.start(ctx, r) // what the shards' last owner left behind
			}
		case res := <-r.wakings.done:
			r.streamWoken(ctx, res, dirty)
		case <-retire:
			r.startSweep(ctx)
		case a := <-r.retirements.ask:
			r.grant(a, dirty)
		case end := <-r.retirements.done:
			r.retireEnded(end, dirty)
		}
		for id := range dirty {
			if ctx.Err() != nil {
				return nil
			}
			// A backlog of thousands of workspaces must not hold retirement back.
			select {
			case <-retire:
				r.startSweep(ctx)
			case a := <-r.retirements.ask:
				r.grant(a, dirty)
			default:
			}
			if err := r.relayWorkspace(ctx, id); errors.Is(err, errWaking) || errors.Is(err, errRetiring) {
				// Passed over again once its stream exists (streamWoken) or is gone (retireEnded).
			} else if err != nil {
				// The workspace stays behind; the next poll retries it from a fresh look. A
				// wake-up for a workspace Postgres does not know (deleted since, or forged by
				// whoever may publish on NATS) is no failure worth a line each.
				if e, ok := persist.ErrorOf(err); !ok || e.Code != persist.CodeNotFound {
					r.logger.Warn("relay failed", "workspace_id", id, "error", err)
				}
				delete(r.streams, id)
				r.handoff.forget(id)
				r.passFailed(ctx, id, err)
			} else {
				r.passDone(id)
			}
			delete(dirty, id)
		}
		r.checkHealth()
	}
}

// claim checks the lock connection and tries every shard not yet owned. It returns the lock
// session to keep (nil when the database is unreachable: nothing is owned then), and whether it
// took a shard it did not hold.
func (r *Relay) claim(ctx context.Context, locks *persist.Locks) (*persist.Locks, bool) {
	if ctx.Err() != nil {
		// Stopping: a failed check now says nothing about the database; keep what is held
		// until Run releases it.
		return locks, false
	}
	if locks != nil && locks.Check(ctx) != nil {
		if ctx.Err() != nil {
			return locks, false // the check was cut short by the stop, not by the database
		}
		_ = locks.Close(context.WithoutCancel(ctx))
		locks = nil
		r.health.databaseLost()
	}
	if locks == nil {
		r.dropAll()
		var err error
		if locks, err = r.cfg.Store.Locks(ctx); err != nil {
			if ctx.Err() == nil {
				r.logger.Warn("relay cannot reach the database", "error", err)
				r.health.databaseLost()
			}
			return nil, false
		}
		r.health.databaseBack(r.logger)
	}
	n, gained := 0, false
	for shard, owned := range r.owned {
		if !owned {
			ok, err := locks.TryLock(ctx, relayLockBase+int64(shard))
			if err != nil && ctx.Err() != nil {
				return locks, gained // stopping: keep what is held until Run releases it
			}
			if err != nil {
				r.dropAll()
				_ = locks.Close(context.WithoutCancel(ctx))
				return nil, false
			}
			r.owned[shard], gained = ok, gained || ok
		}
		if r.owned[shard] {
			n++
		}
	}
	r.metrics.owned.Set(float64(n))
	return locks, gained
}

func (r *Relay) dropAll() {
	clear(r.owned)
	clear(r.health.failing)
	clear(r.streams)
	clear(r.woken)
	r.handoff.reset()
	r.metrics.owned.Set(0)
}

// OwnedShards counts the shards this relay holds; for tests and the owner's dashboard.
// It is read by the goroutine that runs the relay only, so tests read it after Run returns.
func (r *Relay) OwnedShards() int {
	n := 0
	for _, o := range r.owned {
		if o {
			n++
		}
	}
	return n
}

// relayWorkspace brings one workspace's stream up to its log: verify (or rebuild) the stream,
// apply any prune, then publish the missing events batch by batch, recording the position after
// each batch.
func (r *Relay) relayWorkspace(ctx context.Context, workspaceID string) error {
	if r.retiring(workspaceID) {
		return errRetiring
	}
	// Reads go without a transaction (ReadV): each is one statement, and a pass runs once per
	// committed group of events, so its round trips count.
	st, err := persist.ReadV(ctx, r.cfg.Store, func(tx *persist.Reader) (persist.RelayState, error) {
		return tx.RelayStateGet(ctx, workspaceID)
	})
	if err != nil {
		return err
	}
	if st.StreamRetired && st.Head == st.Relayed {
		// Nothing new, and no stream: a prune has nothing to purge, only to be recorded.
		if st.PrunedThrough == st.StreamPrunedThrough {
			return nil
		}
		return r.record(ctx, workspaceID, st.Relayed, st.PrunedThrough)
	}
	if _, ok := r.wakings.pending[workspaceID]; ok {
		return errWaking
	}
	// created is the first cursor of a stream woken for this pass, recorded once its events are
	// in it; early is the workspace's first events, previewed to its sockets before the stream
	// existed, which the pass publishes into it as they were encoded.
	w := r.woken[workspaceID]
	delete(r.woken, workspaceID)
	created, early := w.created, w.early
	mark, ok := r.streams[workspaceID]
	if !ok || time.Since(mark.verifiedAt) > r.cfg.VerifyInterval {
		if st.StreamRetired {
			return r.wake(ctx, st)
		}
		last, err := r.verifyStream(ctx, st)
		if err != nil {
			return err
		}
		mark = streamMark{last: last, verifiedAt: time.Now()}
	}
	recordCreated := func() error {
		if created == 0 {
			return nil
		}
		first := created
		created = 0
		return r.cfg.Store.RelayStreamCreated(ctx, workspaceID, int64(first))
	}
	last := mark.last
	if st.PrunedThrough > st.StreamPrunedThrough || last < uint64(st.PrunedThrough) {
		// Purging up to a sequence past the end moves the stream's first sequence there.
		s, err := r.js.Stream(ctx, StreamName(workspaceID))
		if err != nil {
			return err
		}
		if err := s.Purge(ctx, jetstream.WithPurgeSequence(uint64(st.PrunedThrough)+1)); err != nil {
			return fmt.Errorf("relay: apply prune to the stream: %w", err)
		}
		last = max(last, uint64(st.PrunedThrough))
	}
	mark.last = last
	r.streams[workspaceID] = mark
	pos := int64(last)
	for done := false; ; {
		if pos != st.Relayed || st.PrunedThrough != st.StreamPrunedThrough {
			if err := recordCreated(); err != nil {
				return err
			}
			if err := r.record(ctx, workspaceID, pos, st.PrunedThrough); err != nil {
				return err
			}
			st.Relayed, st.StreamPrunedThrough = pos, st.PrunedThrough
		}
		if done {
			return recordCreated()
		}
		var b batch
		previewed := early != nil && early.events[0].Cursor == pos+1
		if previewed {
			b = *early
		} else if b, err = r.next(ctx, workspaceID, pos); err != nil {
			delete(r.streams, workspaceID)
			return err
		}
		early = nil
		if len(b.events) == 0 {
			return recordCreated()
		}
		if err := r.publish(ctx, b); err != nil {
			delete(r.streams, workspaceID)
			return err
		}
		events := b.events
		pos = events[len(events)-1].Cursor
		mark.last = uint64(pos)
		r.streams[workspaceID] = mark
		// A short read was the end of the log when it was read; what commits later wakes the
		// relay again, so the pass records its position and ends without another read. A short
		// hand-off may not be the end, but whatever follows it was committed with a wake-up of
		// its own, sent after its hand-off (if any), so a later pass relays it. Previewed events
		// were read before the stream was created, and the wake-ups of what committed while it
		// was (errWaking) are spent: the log is read on after them.
		done = len(events) < r.cfg.Batch && !previewed
	}
}

func (r *Relay) record(ctx context.Context, workspaceID string, pos, prunedThrough int64) error {
	if err := r.cfg.Store.RelayPositionSet(ctx, workspaceID, pos, prunedThrough); err != nil {
		return err
	}
	if r.cfg.OnRelayed != nil {
		r.cfg.OnRelayed(workspaceID, pos)
	}
	return nil
}
