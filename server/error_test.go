package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server"
)

func TestErrorModel(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	me := h.NewUser(t)

	t.Run("UnknownAPIRouteIsJSON404", func(t *testing.T) {
		t.Parallel()
		r := h.Get(t, "/api/no/such/route", me.Token)
		r.RequireError(t, http.StatusNotFound, persist.CodeRouteNotFound)
		require.NotEmpty(t, r.Header.Get("X-Correlation-ID"))
	})

	t.Run("WrongMethodIsJSON405", func(t *testing.T) {
		t.Parallel()
		h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/me", Token: me.Token}).
			RequireError(t, http.StatusMethodNotAllowed, persist.CodeMethodNotAllowed)
	})

	t.Run("BodyOverOneMiBIs413", func(t *testing.T) {
		t.Parallel()
		big := `{"display_name":"` + strings.Repeat("a", 1<<20) + `"}`
		h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: me.Token, Body: big}).
			RequireError(t, http.StatusRequestEntityTooLarge, persist.CodeBodyTooLarge)
	})

	t.Run("TrailingJSONValueIs400", func(t *testing.T) {
		t.Parallel()
		h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: me.Token, Body: `{"display_name":"X"} {"handle":"y"}`}).
			RequireError(t, http.StatusBadRequest, persist.CodeInvalidJSON)
		got := h.Get(t, "/api/me", me.Token).JSON(t)["user"].(map[string]any)
		require.Equal(t, me.User.DisplayName, got["display_name"], "a refused request changes nothing")
	})

	t.Run("MalformedAndMistypedJSONIs400", func(t *testing.T) {
		t.Parallel()
		h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: me.Token, Body: `{"display_name":`}).
			RequireError(t, http.StatusBadRequest, persist.CodeInvalidJSON)
		h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: me.Token, Body: `{"display_name":5}`}).
			RequireError(t, http.StatusBadRequest, persist.CodeInvalidJSON)
	})
}

// TestDatabaseTextNeverReachesClients breaks the database under a running server: the client gets
// the generic internal error and nothing of the driver's message.
func TestDatabaseTextNeverReachesClients(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	me := h.NewUser(t)
	h.Store.Close()
	r := h.Get(t, "/api/me", me.Token)
	r.RequireError(t, http.StatusInternalServerError, persist.CodeInternal)
	require.NotContains(t, strings.ToLower(string(r.Body)), "pool")
	require.NotContains(t, strings.ToLower(string(r.Body)), "sql")

	ready := h.Get(t, "/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, ready.Status)
	require.JSONEq(t, `{"status":"unavailable","failing":["database"]}`, string(ready.Body))
}

func TestCorrelationID(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	for _, tc := range []struct {
		name, sent string
		kept       bool
	}{
		{"SafeIsKept", "req-123_abc.def:9", true},
		{"UnsafeIsReplaced", "bad id\twith<tags>", false},
		{"OverlongIsReplaced", strings.Repeat("a", 129), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := h.Do(t, servertest.Request{Method: http.MethodGet, Path: "/healthz", Header: map[string]string{"X-Correlation-ID": tc.sent}})
			got := r.Header.Get("X-Correlation-ID")
			require.NotEmpty(t, got)
			require.Equal(t, tc.kept, got == tc.sent)
		})
	}
	t.Run("OnErrorsToo", func(t *testing.T) {
		t.Parallel()
		r := h.Get(t, "/api/me", "")
		require.Equal(t, http.StatusUnauthorized, r.Status)
		require.NotEmpty(t, r.Header.Get("X-Correlation-ID"))
	})
}

func TestHealth(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	r := h.Get(t, "/healthz", "")
	r.RequireStatus(t, http.StatusOK)
	require.JSONEq(t, `{"status":"ok"}`, string(r.Body))
	r = h.Get(t, "/readyz", "")
	r.RequireStatus(t, http.StatusOK)
	require.JSONEq(t, `{"status":"ready"}`, string(r.Body))
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	t.Run("DisabledIs404", func(t *testing.T) {
		t.Parallel()
		servertest.New(t).Get(t, "/metrics", "").RequireError(t, http.StatusNotFound, persist.CodeRouteNotFound)
	})
	t.Run("LabelsAreRoutePatternsAndStatusClasses", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.Metrics = true }))
		me := h.NewUser(t)
		h.Get(t, "/api/me", me.Token).RequireStatus(t, http.StatusOK)
		h.Get(t, "/api/nothing/"+me.User.ID, me.Token)
		r := h.Get(t, "/metrics", "")
		r.RequireStatus(t, http.StatusOK)
		body := string(r.Body)
		require.Contains(t, body, `natter_http_requests_total{route="/api/me",status_class="2xx"} 1`)
		require.Contains(t, body, `route="unmatched",status_class="4xx"`)
		require.NotContains(t, body, me.User.ID, "raw paths never become labels")
	})
	t.Run("CountersExistFromTheStart", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.Metrics = true }), servertest.WithWebPush(nil))
		body := string(h.Get(t, "/metrics", "").Body)
		for _, series := range []string{
			`natter_realtime_closes_total{code="1008"} 0`, `natter_realtime_closes_total{code="1013"} 0`,
			`natter_realtime_closes_total{code="4001"} 0`, `natter_realtime_closes_total{code="1001"} 0`,
			`natter_push_outcomes_total{outcome="delivered"} 0`, `natter_push_outcomes_total{outcome="failed"} 0`,
			`natter_push_outcomes_total{outcome="gone"} 0`,
		} {
			require.Contains(t, body, series)
		}
	})
}

// TestGracefulShutdown cancels the server while a handler is reading a request body: the
// request still completes, and Serve returns once it has.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	me := h.NewUser(t)
	ctx, cancel := context.WithCancel(t.Context())
	url, done := serveOnLoopback(t, ctx, h.Server)

	pr, pw := io.Pipe()
	reading := make(chan struct{})
	// Expect: 100-continue makes the server say when the handler starts reading the body.
	trace := &httptrace.ClientTrace{Got100Continue: func() { close(reading) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodPatch, url+"/api/me", pr)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+me.Token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Expect", "100-continue")
	type result struct {
		resp *http.Response
		err  error
	}
	resc := make(chan result, 1)
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	go func() {
		resp, err := client.Do(req)
		resc <- result{resp, err}
	}()
	<-reading
	cancel()
	_, err = pw.Write([]byte(`{"display_name":"Drained"}`))
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	res := <-resc
	require.NoError(t, res.err, "the in-flight request survives shutdown")
	defer res.resp.Body.Close()
	require.Equal(t, http.StatusOK, res.resp.StatusCode)
	require.NoError(t, <-done)
	client.CloseIdleConnections()
}

// serveOnLoopback runs s.Serve on a fresh loopback listener until ctx ends.
func serveOnLoopback(t *testing.T, ctx context.Context, s *server.Server) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	return "http://" + ln.Addr().String(), done
}
