package outbound

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNewClient: the properties every outbound client shares, whoever builds it.
func TestNewClient(t *testing.T) {
	t.Parallel()
	serve := func(t *testing.T, h http.HandlerFunc) *httptest.Server {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv
	}

	t.Run("DefaultPolicyRefusesLoopback", func(t *testing.T) {
		t.Parallel()
		var hits atomic.Int32
		srv := serve(t, func(http.ResponseWriter, *http.Request) { hits.Add(1) })
		_, err := NewClient(ClientConfig{}).Get(srv.URL)
		require.ErrorIs(t, err, ErrRefused)
		require.Zero(t, hits.Load())
	})

	t.Run("RedirectsAreAnswers", func(t *testing.T) {
		t.Parallel()
		var followed atomic.Int32
		target := serve(t, func(http.ResponseWriter, *http.Request) { followed.Add(1) })
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, target.URL, http.StatusFound) })
		resp, err := NewClient(ClientConfig{Policy: PublicOrLoopback}).Get(srv.URL)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusFound, resp.StatusCode)
		require.Zero(t, followed.Load())
	})

	t.Run("HugeHeaderIsRefused", func(t *testing.T) {
		t.Parallel()
		srv := serve(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Filler", strings.Repeat("a", 70<<10))
		})
		_, err := NewClient(ClientConfig{Policy: PublicOrLoopback}).Get(srv.URL)
		require.ErrorContains(t, err, "header")
	})

	t.Run("SlowAnswerTimesOut", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		srv := serve(t, func(http.ResponseWriter, *http.Request) { <-release })
		t.Cleanup(func() { close(release) })
		_, err := NewClient(ClientConfig{Policy: PublicOrLoopback, Timeout: 100 * time.Millisecond}).Get(srv.URL)
		var netErr net.Error
		require.ErrorAs(t, err, &netErr)
		require.True(t, netErr.Timeout(), "%v", err)
	})

	t.Run("ConnectionsKeptOnlyWhenAsked", func(t *testing.T) {
		t.Parallel()
		var conns atomic.Int32
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		t.Cleanup(srv.Close)
		get := func(c *http.Client) {
			resp, err := c.Get(srv.URL)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
		}
		fresh := NewClient(ClientConfig{Policy: PublicOrLoopback})
		get(fresh)
		get(fresh)
		require.Equal(t, int32(2), conns.Load(), "without IdleConnsPerHost every call dials afresh")
		kept := NewClient(ClientConfig{Policy: PublicOrLoopback, IdleConnsPerHost: 1})
		get(kept)
		get(kept)
		require.Equal(t, int32(3), conns.Load(), "with IdleConnsPerHost the second call reuses the first's connection")
	})

	t.Run("NoEnvironmentProxy", func(t *testing.T) {
		t.Parallel()
		require.Nil(t, NewTransport(ClientConfig{}).Proxy)
	})
}
