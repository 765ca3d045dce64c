package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics holds the server's own registry (never the global one), labelled by route pattern and
// status class only.
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "natter_http_requests_total",
			Help: "HTTP requests by route pattern and status class.",
		}, []string{"route", "status_class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "natter_http_request_duration_seconds",
			Help:    "HTTP request duration by route pattern.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
	}
	m.registry.MustRegister(m.requests, m.duration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry lets other components (relay, realtime) register their collectors.
func (m *metrics) Registry() *prometheus.Registry { return m.registry }

func (m *metrics) observe(route string, status int, elapsed time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status/100)+"xx").Inc()
	m.duration.WithLabelValues(route).Observe(elapsed.Seconds())
}

// handleMetrics serves GET /metrics: Prometheus text when enabled, 404 otherwise.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.Metrics {
		s.notFound(w, r)
		return
	}
	promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// MetricsHandler serves the registry's Prometheus text, for a listener of its own
// (--metrics-addr), whatever Config.Metrics says about /metrics on the API's.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{})
}
