package server

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
)

// correlate keeps a safe caller-supplied X-Correlation-ID (or X-Request-ID) and otherwise makes
// one, and sets it on the response before anything else can answer.
func correlate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Correlation-ID")
		if !safeCorrelationID(id) {
			id = r.Header.Get("X-Request-ID")
		}
		if !safeCorrelationID(id) {
			b := make([]byte, 12)
			_, _ = rand.Read(b)
			id = hex.EncodeToString(b)
		}
		w.Header().Set("X-Correlation-ID", id)
		next.ServeHTTP(w, r.WithContext(withCorrelationID(r.Context(), id)))
	})
}

// safeCorrelationID accepts 1-128 characters of letters, digits, '-', '_', '.' and ':', so a
// caller's id can be logged and echoed without escaping.
func safeCorrelationID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (rec *statusRecorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
	rec.ResponseWriter.WriteHeader(status)
}

func (rec *statusRecorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	n, err := rec.ResponseWriter.Write(b)
	rec.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's other controls.
func (rec *statusRecorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// Hijack hands the connection over (the WebSocket upgrade), keeping sight of the status line the
// new owner writes first (101, or a refusal), which no WriteHeader reports. The hijacked writer
// (empty: nothing was written before the hijack) is pointed at the sniffer, which writes to the
// connection, so sniffing costs no second buffer: a handshake storm allocates 4 KiB less per
// socket.
func (rec *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(rec.ResponseWriter).Hijack()
	if err != nil {
		return conn, rw, err
	}
	rw.Writer.Reset(&statusSniffer{next: conn, rec: rec})
	return conn, rw, nil
}

// statusSniffer reads the status code off the first bytes written to a hijacked connection and
// passes everything through to the connection.
type statusSniffer struct {
	next io.Writer
	rec  *statusRecorder // nil once the status line was seen
}

func (s *statusSniffer) Write(p []byte) (int, error) {
	if s.rec != nil {
		// "HTTP/1.1 101 Switching Protocols"
		if len(p) >= 12 && bytes.HasPrefix(p, []byte("HTTP/1.")) && s.rec.status == 0 {
			if code, err := strconv.Atoi(string(p[9:12])); err == nil {
				s.rec.status = code
			}
		}
		s.rec = nil
	}
	return s.next.Write(p)
}

// observe records metrics and writes the access log line, both keyed by the route pattern (never
// the raw path, whose ids would explode label cardinality and leak into logs).
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		route := chi.RouteContext(r.Context()).RoutePattern()
		if route == "" {
			route = "unmatched"
		}
		elapsed := time.Since(start)
		s.metrics.observe(route, rec.status, elapsed)
		if s.cfg.AccessLog {
			s.logger.Info("request", "method", r.Method, "route", route, "status", rec.status,
				"duration", elapsed, "bytes", rec.bytes, "correlation_id", correlationID(r.Context()))
		}
	})
}

// recoverPanics turns a handler panic into the generic 500, logged once.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.writeError(w, r, fmt.Errorf("panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}
