package signin

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/natterchat/natter/outbound"
	"github.com/stretchr/testify/require"
)

func TestClient(t *testing.T) {
	t.Parallel()
	allowLoopback := func(a netip.Addr) bool { return a.Unmap().IsLoopback() }

	t.Run("DefaultPolicyRefusesLoopback", func(t *testing.T) {
		t.Parallel()
		var hits atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
		t.Cleanup(srv.Close)
		_, err := newClient(nil, 0).Get(srv.URL)
		require.ErrorIs(t, err, outbound.ErrRefused)
		require.Zero(t, hits.Load())
	})

	t.Run("RedirectsAreNotFollowed", func(t *testing.T) {
		t.Parallel()
		var followed atomic.Int32
		target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed.Add(1) }))
		t.Cleanup(target.Close)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL, http.StatusFound)
		}))
		t.Cleanup(srv.Close)
		resp, err := newClient(allowLoopback, 0).Get(srv.URL)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusFound, resp.StatusCode)
		require.Zero(t, followed.Load())
	})

	t.Run("NoProxy", func(t *testing.T) {
		t.Parallel()
		transport := newClient(nil, 0).Transport.(*http.Transport)
		require.Nil(t, transport.Proxy, "environment proxy settings are ignored")
		require.True(t, transport.DisableKeepAlives)
	})

	t.Run("ReadLimited", func(t *testing.T) {
		t.Parallel()
		body, err := readLimited(bytesReader(4), 4)
		require.NoError(t, err)
		require.Len(t, body, 4)
		_, err = readLimited(bytesReader(5), 4)
		require.True(t, errors.Is(err, errTooLarge))
	})
}

func bytesReader(n int) io.Reader { return bytes.NewReader(make([]byte, n)) }
