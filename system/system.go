// Package system is the one assembly of a running Natter. From a Config holding the opened
// database and NATS connection, New builds every component — the relay, the realtime hub, bots'
// NATS access, the event-subscription deliverer, web push and its sweep, the HTTP API — and Run
// runs them and drains them in one order. `natter serve` and `dev` (and so `natter cluster`,
// whose replicas are serve), the HTTP test harness (admin/servertest) and the web client's
// harness all call it: tests run what production runs, and a new component is one edit here.
//
// What stays with the caller is what differs between a process and a test: opening the
// database and NATS, the listener, and a process's start-up chores (the database claim, dev
// bootstrap, queued upload deletions).
package system

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/realtime"
	"github.com/natterchat/natter/realtime/delivery"
	"github.com/natterchat/natter/realtime/push"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/streams"
)

// Config is what the system is built from. Each component has its own configuration here, as
// the component documents it; New fills in the fields every component shares — Store and NATS,
// the wiring between components, and Logger where the component's is nil — so the caller sets
// only what it changes.
type Config struct {
	// Store is the database, built with streams.StoreConfig(NATS, …) so that its commits wake
	// the relay and announce revocations. Required.
	Store *persist.Store
	// NATS is this process's connection, to the embedded server or an external cluster. Required.
	NATS *nats.Conn
	// Embedded is the embedded NATS server, nil on an external cluster. Bots connect to it (bot
	// access), and the relay recovers its store after a write error.
	Embedded *streams.Embedded
	// Logger receives every component's log. Default slog.Default().
	Logger *slog.Logger

	// Server is the HTTP API's configuration. New sets Store and Realtime, and Callbacks when
	// nil (to the client below); it adds the components' metrics to Collectors and the relay's health to ReadyChecks; the
	// caller sets the rest (Uploads among them).
	Server server.Config
	// Relay copies committed events into the workspace streams.
	Relay streams.RelayConfig
	// Realtime is the WebSocket hub.
	Realtime realtime.Config
	// Callbacks is the outgoing client of slash-command and event-subscription callbacks.
	// Default: public addresses only (outbound.PublicOnly).
	Callbacks outbound.CallbackConfig
	// Delivery is the event-subscription deliverer; its Callbacks is the client above.
	Delivery delivery.Config
	// Bots is bots' NATS access: on the embedded server it admits them; on an external cluster
	// with Callout it answers their replay requests. Without either it does not run.
	Bots streams.BotAccessConfig
	// Callout admits bots to an external cluster through its auth_callout; nil: none. Not with
	// Embedded.
	Callout *streams.AuthCalloutConfig
	// Push is the Web Push (and Pushover) deliverer; it runs with the dead-device sweep
	// (PushSweep) when Push is set and Server.DisableWebPush is not. New then makes the server's
	// push key pair on first start.
	Push      *push.Config
	PushSweep push.SweeperConfig
}

// ServerConfigError is New's error when the HTTP server refuses its configuration: the
// caller's mistake, where New's other errors are the system's.
type ServerConfigError struct{ Err error }

func (e *ServerConfigError) Error() string { return e.Err.Error() }
func (e *ServerConfigError) Unwrap() error { return e.Err }

// System is the running Natter's components, built and wired.
type System struct {
	Server    *server.Server
	Relay     *streams.Relay
	Hub       *realtime.Hub
	Callbacks *outbound.CallbackClient
	Deliverer *delivery.Deliverer
	// Bots is nil when bots have no NATS access (an external cluster without Callout).
	Bots    *streams.BotAccess
	Callout *streams.AuthCallout
	// Push and PushSweeper are nil when web push is off.
	Push        *push.Deliverer
	PushSweeper *push.Sweeper

	logger *slog.Logger
	// parts are the components Run runs beside the HTTP server, each until its context ends.
	parts []part
}

type part struct {
	name string
	run  func(context.Context) error
}

// New builds every component from cfg. It writes nothing but the push key pair (on first start,
// with push on), and starts nothing: Run does.
func New(ctx context.Context, cfg Config) (*System, error) {
	if cfg.Store == nil || cfg.NATS == nil {
		return nil, errors.New("system: Config.Store and Config.NATS are required")
	}
	if cfg.Embedded != nil && cfg.Callout != nil {
		return nil, errors.New("system: Config.Callout is for an external cluster; the embedded server admits bots itself")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &System{logger: cfg.Logger}
	store, nc, logger := cfg.Store, cfg.NATS, cfg.Logger
	var err error

	rc := cfg.Relay
	rc.Store, rc.NATS, rc.Logger = store, nc, or(rc.Logger, logger)
	if cfg.Embedded != nil && rc.RecoverStore == nil {
		rc.RecoverStore = cfg.Embedded.RecoverStore
	}
	if s.Relay, err = streams.NewRelay(rc); err != nil {
		return nil, err
	}
	s.add("relay", s.Relay.Run)

	if cfg.Callout != nil {
		cc := *cfg.Callout
		cc.Store, cc.NATS, cc.Logger = store, nc, or(cc.Logger, logger)
		if s.Callout, err = streams.NewAuthCallout(cc); err != nil {
			return nil, err
		}
		s.add("nats auth callout", s.Callout.Run)
	}
	if cfg.Embedded != nil || cfg.Callout != nil {
		bc := cfg.Bots
		bc.Store, bc.NATS, bc.Logger, bc.Server = store, nc, or(bc.Logger, logger), cfg.Embedded
		if s.Bots, err = streams.NewBotAccess(bc); err != nil {
			return nil, err
		}
		s.add("bot access", s.Bots.Run)
	}

	if cfg.Callbacks.AllowAddr == nil {
		cfg.Callbacks.AllowAddr = outbound.PublicOnly
	}
	if s.Callbacks, err = outbound.NewCallbackClient(cfg.Callbacks); err != nil {
		return nil, err
	}
	dc := cfg.Delivery
	dc.Store, dc.NATS, dc.Logger, dc.Callbacks = store, nc, or(dc.Logger, logger), s.Callbacks
	if s.Deliverer, err = delivery.New(dc); err != nil {
		return nil, err
	}
	s.add("event delivery", s.Deliverer.Run)

	if cfg.Push != nil && !cfg.Server.DisableWebPush {
		if err := s.buildPush(ctx, cfg); err != nil {
			return nil, err
		}
	}

	hc := cfg.Realtime
	hc.Store, hc.NATS, hc.Logger = store, nc, or(hc.Logger, logger)
	if s.Hub, err = realtime.New(hc); err != nil {
		return nil, err
	}
	s.add("realtime", s.Hub.Run)

	sc := cfg.Server
	sc.Store, sc.Logger, sc.Realtime = store, or(sc.Logger, logger), s.Hub
	if sc.Callbacks == nil {
		sc.Callbacks = s.Callbacks
	}
	sc.Collectors = append(append(append([]prometheus.Collector(nil), sc.Collectors...), s.Hub.Collectors()...), s.Relay.Collectors()...)
	if s.Push != nil {
		sc.Collectors = append(sc.Collectors, s.Push.Collectors()...)
	}
	checks := map[string]func(context.Context) error{"relay": s.Relay.Health}
	for name, check := range sc.ReadyChecks {
		checks[name] = check
	}
	sc.ReadyChecks = checks
	if s.Server, err = server.New(sc); err != nil {
		return nil, &ServerConfigError{Err: err}
	}
	return s, nil
}

// buildPush makes the push key pair on first start, and the deliverer and its sweep.
func (s *System) buildPush(ctx context.Context, cfg Config) error {
	key, err := push.EnsureKey(ctx, cfg.Store)
	if err != nil {
		return fmt.Errorf("web push key: %w", err)
	}
	s.logger.Info("web push enabled", "key_fingerprint", key.Fingerprint)
	pc := *cfg.Push
	pc.Store, pc.NATS, pc.Logger = cfg.Store, cfg.NATS, or(pc.Logger, cfg.Logger)
	if pc.PushoverToken != "" {
		s.logger.Info("pushover enabled")
	}
	if s.Push, err = push.New(pc); err != nil {
		return err
	}
	sw := cfg.PushSweep
	sw.Store, sw.Logger = cfg.Store, or(sw.Logger, cfg.Logger)
	if s.PushSweeper, err = push.NewSweeper(sw); err != nil {
		return err
	}
	s.add("web push", s.Push.Run)
	s.add("push sweep", s.PushSweeper.Run)
	return nil
}

func (s *System) add(name string, run func(context.Context) error) {
	s.parts = append(s.parts, part{name: name, run: run})
}

// Run serves the API on ln and runs every other component until ctx ends or one of them fails,
// then drains: the HTTP server first (it stops accepting and gives active requests
// Server.ShutdownTimeout), then the rest, so the events of the last requests still reach the
// streams and the sockets. It returns the first component's failure, nil after a clean stop.
// A System runs once.
func (s *System) Run(ctx context.Context, ln net.Listener) error {
	// The components outlive ctx until the server has drained; a failure among them stops the
	// server too.
	parts, stopParts := context.WithCancel(context.WithoutCancel(ctx))
	defer stopParts()
	serving, stopServing := context.WithCancel(ctx)
	defer stopServing()
	var g errgroup.Group
	for _, p := range s.parts {
		g.Go(func() error {
			err := p.run(parts)
			if err != nil {
				stopServing()
				return fmt.Errorf("%s: %w", p.name, err)
			}
			return nil
		})
	}
	serr := s.Server.Serve(serving, ln)
	stopParts()
	if err := g.Wait(); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("http: %w", serr)
	}
	return nil
}

// or is the component's own logger when it has one, else the system's.
func or(own, system *slog.Logger) *slog.Logger {
	if own != nil {
		return own
	}
	return system
}
