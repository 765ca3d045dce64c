package streams

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// ErrRelayStalled is what Relay.Health returns while committed events cannot reach their
// streams: readiness reports it, since sockets, deliveries and push then receive nothing new.
var ErrRelayStalled = errors.New("events cannot reach the workspace streams")

// relayHealth is what the relay knows of its own progress. Everything but stalled belongs to
// the goroutine that runs the relay.
type relayHealth struct {
	// failing holds the owned workspaces whose last pass failed, with the time of the first
	// failure since their last success.
	failing map[string]time.Time
	stalled atomic.Bool
	// The store recovery's back-off: the next attempt is not before recoverAt.
	recoverAt   time.Time
	recoverWait time.Duration
	// dbLostAt is when the relay last found the database unreachable; zero while it answers.
	dbLostAt time.Time
	// replaceAt is, on an external cluster, the back-off of each failing workspace's stream
	// replacement (see replaceRefusingStream).
	replaceAt map[string]backoff

	stalledGauge prometheus.Gauge
	backlog      prometheus.Gauge
	recoveries   prometheus.Counter
}

// recoverWait bounds: the first retry of a store recovery after 1s, then doubling to 30s.
const (
	recoverWaitMin = time.Second
	recoverWaitMax = 30 * time.Second
)

// backoff is when the next attempt may run, and the wait after it.
type backoff struct {
	at   time.Time
	wait time.Duration
}

func newRelayHealth() relayHealth {
	return relayHealth{failing: map[string]time.Time{}, replaceAt: map[string]backoff{}, recoverWait: recoverWaitMin,
		stalledGauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "natter_relay_stalled_workspaces",
			Help: "Workspaces of this relay whose committed events have failed to reach their stream for longer than the stall limit (10s)."}),
		backlog: prometheus.NewGauge(prometheus.GaugeOpts{Name: "natter_relay_backlog_events",
			Help: "Events committed in Postgres and not yet in their stream, over the workspaces this relay owns (read at each poll)."}),
		recoveries: prometheus.NewCounter(prometheus.CounterOpts{Name: "natter_relay_store_recoveries_total",
			Help: "Times the relay recovered from a NATS store that stopped taking writes: the embedded JetStream restarted from its files, or (on an external cluster) a stream that refused every write replaced and rebuilt from the log."}),
	}
}

// Health is nil while events reach their streams and ErrRelayStalled while some have failed to
// for longer than RelayConfig.StallAfter. Safe for concurrent use.
func (r *Relay) Health(context.Context) error {
	if r.health.stalled.Load() {
		return ErrRelayStalled
	}
	return nil
}

// passDone records a workspace's successful pass.
func (r *Relay) passDone(workspaceID string) {
	delete(r.health.replaceAt, workspaceID)
	if _, ok := r.health.failing[workspaceID]; ok {
		delete(r.health.failing, workspaceID)
		if len(r.health.failing) == 0 {
			r.health.recoverWait = recoverWaitMin
		}
	}
}

// passFailed records a workspace's failed pass. A publish nobody answered on the embedded server
// is its store refusing writes: RecoverStore is tried, with back-off.
func (r *Relay) passFailed(ctx context.Context, workspaceID string, err error) {
	if _, ok := r.health.failing[workspaceID]; !ok {
		r.health.failing[workspaceID] = time.Now()
	}
	if !errors.Is(err, jetstream.ErrAsyncPublishTimeout) {
		return
	}
	if r.cfg.RecoverStore == nil {
		r.replaceRefusingStream(ctx, workspaceID)
		return
	}
	if time.Now().Before(r.health.recoverAt) {
		return
	}
	h := &r.health
	h.recoverAt = time.Now().Add(h.recoverWait)
	h.recoverWait = min(2*h.recoverWait, recoverWaitMax)
	if err := r.cfg.RecoverStore(ctx); err != nil {
		if ctx.Err() == nil {
			r.logger.Warn("publishing stopped answering and the NATS store cannot be recovered yet", "error", err,
				"next_attempt_ms", time.Until(h.recoverAt).Milliseconds())
		}
		return
	}
	h.recoveries.Inc()
	clear(r.streams) // every stream is verified again against what its files held
	r.handoff.reset()
	r.logger.Warn("publishing stopped answering: JetStream restarted from its files; relaying resumes from what each stream holds")
}

// replaceRefusingStream deals with a stream of an external cluster that answers but has left
// every publish unanswered for the stall limit. A NATS server whose disk filled keeps a write
// error on the stream's files until it restarts, or shuts its JetStream down, and natter cannot
// restart it; deleting the stream drops those files, and the next pass rebuilds the stream from
// the log (with the same sequences) on whichever server the cluster places it once writes work
// again. While they do not, the rebuilt stream refuses again and is replaced again, with
// back-off from 1s to 30s. The stream is a cache of the log: nothing is lost, and followers
// start again from their cursors. A stream that does not answer at all (no leader: an election,
// nodes down) is left alone: it comes back by itself.
func (r *Relay) replaceRefusingStream(ctx context.Context, workspaceID string) {
	h := &r.health
	now := time.Now()
	b := h.replaceAt[workspaceID]
	if now.Sub(h.failing[workspaceID]) < r.cfg.StallAfter || now.Before(b.at) {
		return
	}
	b.wait = min(max(2*b.wait, recoverWaitMin), recoverWaitMax)
	b.at = now.Add(b.wait)
	h.replaceAt[workspaceID] = b
	name := StreamName(workspaceID)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := r.js.Stream(ctx, name); err != nil {
		return
	}
	if err := r.js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		r.logger.Warn("a stream refuses every write and cannot be replaced yet", "workspace_id", workspaceID,
			"error", err, "next_attempt_ms", b.wait.Milliseconds())
		return
	}
	h.recoveries.Inc()
	r.logger.Warn("a stream answered but refused every write (a NATS server's store is full or failing): "+
		"deleted, to be rebuilt from the log", "workspace_id", workspaceID, "stream", name)
}

// checkHealth updates the stall gauge and readiness, logging each change once.
func (r *Relay) checkHealth() {
	n, now := 0, time.Now()
	for _, since := range r.health.failing {
		if now.Sub(since) >= r.cfg.StallAfter {
			n++
		}
	}
	r.health.stalledGauge.Set(float64(n))
	was := r.health.stalled.Swap(n > 0)
	switch {
	case n > 0 && !was:
		r.logger.Error("events cannot reach the workspace streams: sockets, deliveries and push get nothing new; "+
			"posting still works and nothing is lost", "stalled_workspaces", n)
	case n == 0 && was:
		r.logger.Info("events reach the workspace streams again")
	default:
		return
	}
	if r.cfg.OnHealth != nil {
		r.cfg.OnHealth(n > 0)
	}
}

// databaseLost notes that the database did not answer.
func (h *relayHealth) databaseLost() {
	if h.dbLostAt.IsZero() {
		h.dbLostAt = time.Now()
	}
}

// databaseBack logs the end of an outage: the refusals were logged, and so is the recovery.
func (h *relayHealth) databaseBack(logger *slog.Logger) {
	if !h.dbLostAt.IsZero() {
		logger.Info("the database is reachable again", "down_ms", time.Since(h.dbLostAt).Milliseconds())
		h.dbLostAt = time.Time{}
	}
}
