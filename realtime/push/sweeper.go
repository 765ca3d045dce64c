package push

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/natterchat/natter/persist"
)

// SweeperConfig configures the dead-device sweep.
type SweeperConfig struct {
	// Store is the database. Required.
	Store *persist.Store
	// Logger receives one line per sweep that removed devices. Default slog.Default().
	Logger *slog.Logger
	// Interval is the time between sweeps; the first runs at start. Default 1h.
	Interval time.Duration
	// OnSwept, when set, is called after every sweep: a test signal. It must not block.
	// Default nil.
	OnSwept func(persist.PushSweepResult, error)
}

// Sweeper removes dead push devices at start and then every Interval (persist.PushSweep: the
// three rules, in one transaction).
type Sweeper struct {
	cfg    SweeperConfig
	logger *slog.Logger
}

// NewSweeper validates cfg and applies its defaults.
func NewSweeper(cfg SweeperConfig) (*Sweeper, error) {
	if cfg.Store == nil {
		return nil, errors.New("webpush: SweeperConfig.Store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Hour
	}
	if cfg.Interval < 0 {
		return nil, errors.New("webpush: SweeperConfig.Interval must be positive")
	}
	return &Sweeper{cfg: cfg, logger: cfg.Logger.With("component", "webpush_sweep")}, nil
}

// Run sweeps at once and then every Interval until ctx ends.
func (s *Sweeper) Run(ctx context.Context) error {
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	for {
		s.Sweep(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Sweep runs one sweep and logs what it removed.
func (s *Sweeper) Sweep(ctx context.Context) {
	r, err := persist.WithTxV(ctx, s.cfg.Store, func(tx *persist.Tx) (persist.PushSweepResult, error) { return tx.PushSweep(ctx) })
	switch {
	case err != nil && ctx.Err() == nil:
		s.logger.Warn("push device sweep failed", "error", err)
	case err == nil && r.Total() > 0:
		s.logger.Info("push devices swept", "dead_run", r.DeadRun, "retired_key", r.RetiredKey, "session_ended", r.SessionEnded)
	}
	if s.cfg.OnSwept != nil {
		s.cfg.OnSwept(r, err)
	}
}
