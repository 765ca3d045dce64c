package server

import (
	"io"
	"net/http"
	"time"
)

// stallChunk bounds the bytes one write deadline covers, so a large response is allowed
// StallTimeout per 64 KiB handed to the connection, not per handler Write.
const stallChunk = 64 << 10

// guardStalls closes the connection of a caller that stops reading its response or stops
// sending its request body for StallTimeout: without it a request waits for such a caller
// forever, holding its goroutine, and an upload its file. Each completed write or read
// starts the time again, so a slow caller that keeps moving is served.
//
// The server sets no write deadline of its own between the requests of a kept-alive
// connection, so each request sets one before anything can be written (a 100 Continue) and
// again when its handler returns (what it left buffered is written after). An upgrade is left
// alone: its connection is handed to the realtime hub, whose upgrader sets and clears its own
// deadline, and must not be given one after the hand-over.
func (s *Server) guardStalls(next http.Handler) http.Handler {
	limit := s.cfg.StallTimeout
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isWebSocketUpgrade(r) {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Now().Add(limit))
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &stallReader{ReadCloser: r.Body, rc: rc, limit: limit}
		}
		next.ServeHTTP(&stallWriter{ResponseWriter: w, rc: rc, limit: limit}, r)
		_ = rc.SetWriteDeadline(time.Now().Add(limit))
	})
}

type stallWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	limit time.Duration
}

func (w *stallWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return w.ResponseWriter.Write(p) // commits the header, as an empty write does
	}
	written := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), stallChunk)]
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.limit))
		n, err := w.ResponseWriter.Write(chunk)
		written += n
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// Unwrap lets http.ResponseController reach the connection's other controls.
func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type stallReader struct {
	io.ReadCloser
	rc    *http.ResponseController
	limit time.Duration
	ended bool
}

func (b *stallReader) Read(p []byte) (int, error) {
	if b.ended {
		// At the body's end the server cleared the deadline and began its own read, which
		// watches for the caller hanging up and cancels the request if it fails: a deadline
		// set now would cancel a handler that reads past the end and works on for the limit.
		return b.ReadCloser.Read(p)
	}
	_ = b.rc.SetReadDeadline(time.Now().Add(b.limit))
	n, err := b.ReadCloser.Read(p)
	b.ended = err == io.EOF
	return n, err
}
