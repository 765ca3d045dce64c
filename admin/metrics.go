package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/natterchat/natter/persist"
)

// processCollectors are the series of the process as a whole that no component owns: the
// database pool, the NATS connection and the build.
func processCollectors(store *persist.Store, nc *nats.Conn) []prometheus.Collector {
	pool := func(name, help string, f func(persist.PoolStats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "natter_db_pool_" + name, Help: help},
			func() float64 { return f(store.PoolStats()) })
	}
	poolTotal := func(name, help string, f func(persist.PoolStats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "natter_db_pool_" + name, Help: help},
			func() float64 { return f(store.PoolStats()) })
	}
	connected := func() float64 {
		if nc.IsConnected() {
			return 1
		}
		return 0
	}
	version, commit, goVersion := buildFacts()
	return []prometheus.Collector{
		pool("max_conns", "Connections the database pool may open.", func(s persist.PoolStats) float64 { return float64(s.Max) }),
		pool("open_conns", "Connections the database pool holds open.", func(s persist.PoolStats) float64 { return float64(s.Open) }),
		pool("acquired_conns", "Pool connections in use.", func(s persist.PoolStats) float64 { return float64(s.Acquired) }),
		pool("idle_conns", "Pool connections idle.", func(s persist.PoolStats) float64 { return float64(s.Idle) }),
		poolTotal("acquires_total", "Connections handed out by the pool.", func(s persist.PoolStats) float64 { return float64(s.Acquires) }),
		poolTotal("acquire_waits_total", "Acquires that waited for a connection (the pool was exhausted or connecting).",
			func(s persist.PoolStats) float64 { return float64(s.Waits) }),
		poolTotal("acquire_wait_seconds_total", "Time acquires spent waiting for a connection.",
			func(s persist.PoolStats) float64 { return s.WaitTime.Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "natter_nats_connected",
			Help: "1 while this process's NATS connection is up, 0 while it is down or reconnecting."}, connected),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "natter_nats_reconnects_total",
			Help: "Times this process's NATS connection reconnected."}, func() float64 { return float64(nc.Stats().Reconnects) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "natter_build_info",
			Help:        "Always 1; the labels say which build runs.",
			ConstLabels: prometheus.Labels{"version": version, "commit": commit, "go_version": goVersion}},
			func() float64 { return 1 }),
	}
}

// metricsListener serves /metrics, and nothing else, on its own address (--metrics-addr), so
// scrapes stay off the public listener.
type metricsListener struct {
	ln      net.Listener
	handler http.Handler
	logger  *slog.Logger
}

// listenMetrics binds --metrics-addr (nil when it is empty).
func listenMetrics(addr string) (*metricsListener, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on --metrics-addr %s: %w", addr, err)
	}
	return &metricsListener{ln: ln}, nil
}

// Run serves until ctx ends.
func (m *metricsListener) Run(ctx context.Context) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.handler)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(m.logger.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(m.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
