package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStallLimitLeavesSlowHandlersAlone: the limit is on the caller's bytes, not on the
// handler. Once a body was read to its end the server watches the connection for the caller
// hanging up and cancels the request if that watch fails: a read deadline set after the end
// (by a reader that asks again past it, as decoders do) would cancel a handler that works on
// for longer than the limit.
func TestStallLimitLeavesSlowHandlersAlone(t *testing.T) {
	t.Parallel()
	const limit = 300 * time.Millisecond
	s := &Server{cfg: Config{StallTimeout: limit}}
	srv := httptest.NewServer(s.guardStalls(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if n, err := r.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			http.Error(w, "read past the end", http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(3 * limit):
			_, _ = io.WriteString(w, "done")
		case <-r.Context().Done():
			http.Error(w, "canceled", http.StatusServiceUnavailable)
		}
	})))
	t.Cleanup(srv.Close)
	resp, err := http.Post(srv.URL, "text/plain", strings.NewReader("a body read to its end"))
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	require.Equal(t, "done", string(raw))
}

// TestStallGuardKeepsEmptyWrites: an empty Write commits the response's header, as it does
// without the guard; a header set after it is not sent.
func TestStallGuardKeepsEmptyWrites(t *testing.T) {
	t.Parallel()
	s := &Server{cfg: Config{StallTimeout: time.Minute}}
	srv := httptest.NewServer(s.guardStalls(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(nil)
		w.Header().Set("X-Late", "1")
	})))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, resp.Header.Get("X-Late"), "the header was still open after an empty write")
}
