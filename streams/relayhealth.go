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

	stalledGauge prometheus.Gauge
	backlog      prometheus.Gauge
	recoveries   prometheus.Counter
}

// recoverWait bounds: the first retry of a store recovery after 1s, then doubling to 30s.
const (
	recoverWaitMin = time.Second
	recoverWaitMax = 30 * time.Second
)

func newRelayHealth() relayHealth {
	return relayHealth{failing: map[string]time.Time{}, recoverWait: recoverWaitMin,
		stalledGauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "natter_relay_stalled_workspaces",
			Help: "Workspaces of this relay whose committed events have failed to reach their stream for longer than the stall limit (10s)."}),
		backlog: prometheus.NewGauge(prometheus.GaugeOpts{Name: "natter_relay_backlog_events",
			Help: "Events committed in Postgres and not yet in their stream, over the workspaces this relay owns (read at each poll)."}),
		recoveries: prometheus.NewCounter(prometheus.CounterOpts{Name: "natter_relay_store_recoveries_total",
			Help: "Times the relay restarted the embedded JetStream from its files after its store stopped taking writes."}),
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
	if r.cfg.RecoverStore == nil || !errors.Is(err, jetstream.ErrAsyncPublishTimeout) || time.Now().Before(r.health.recoverAt) {
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
