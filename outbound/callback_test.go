package outbound

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// receiver is an httptest server on 127.0.0.1 that hands each request to the test.
type received struct {
	header http.Header
	body   []byte
}

func receiver(t *testing.T, answer func(w http.ResponseWriter)) (*httptest.Server, <-chan received) {
	t.Helper()
	got := make(chan received, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- received{header: r.Header.Clone(), body: body}
		answer(w)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func loopback(a netip.Addr) bool { return a.IsLoopback() }

func newClient(t *testing.T, cfg CallbackConfig) *CallbackClient {
	t.Helper()
	c, err := NewCallbackClient(cfg)
	require.NoError(t, err)
	return c
}

func TestPostSignsTheBody(t *testing.T) {
	t.Parallel()
	srv, got := receiver(t, func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"ok":true}`)) })
	c := newClient(t, CallbackConfig{AllowAddr: loopback})
	body := []byte(`{"hello":"world"}`)
	res := c.Post(t.Context(), Callback{URL: srv.URL + "/hook", Secret: "whsec_test", Body: body,
		Header: map[string]string{HeaderEventID: "evt_1"}})
	require.NoError(t, res.Err)
	require.True(t, res.OK())
	require.Equal(t, `{"ok":true}`, string(res.Body))
	r := <-got
	require.Equal(t, body, r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, "evt_1", r.header.Get(HeaderEventID))
	ts, sig := r.header.Get(HeaderTimestamp), r.header.Get(HeaderSignature)
	require.NotEmpty(t, ts)
	require.True(t, strings.HasPrefix(sig, "sha256="))
	require.True(t, Verify("whsec_test", ts, body, sig))
	require.False(t, Verify("whsec_other", ts, body, sig))
}

func TestStrictPolicyRefusesLoopback(t *testing.T) {
	t.Parallel()
	srv, got := receiver(t, func(w http.ResponseWriter) {})
	c := newClient(t, CallbackConfig{}) // PublicOnly
	res := c.Post(t.Context(), Callback{URL: srv.URL, Secret: "s", Body: []byte(`{}`)})
	require.ErrorIs(t, res.Err, ErrRefused)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	res = c.Post(t.Context(), Callback{URL: "http://localhost:" + u.Port(), Secret: "s", Body: []byte(`{}`)})
	require.ErrorIs(t, res.Err, ErrRefused)
	require.Empty(t, got, "a refused destination was called")
}

// fixedResolver answers every lookup with the same addresses.
type fixedResolver []netip.Addr

func (f fixedResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return f, nil
}

func TestMixedAnswersAreRefused(t *testing.T) {
	t.Parallel()
	srv, got := receiver(t, func(w http.ResponseWriter) {})
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	// One public answer beside the loopback receiver: the whole name is refused, even by a
	// policy that would admit each public address.
	c := newClient(t, CallbackConfig{AllowAddr: PublicOnly,
		Resolver: fixedResolver{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")}})
	res := c.Post(t.Context(), Callback{URL: "http://hooks.example.com:" + u.Port(), Secret: "s", Body: []byte(`{}`)})
	require.ErrorIs(t, res.Err, ErrRefused)
	require.Contains(t, res.Err.Error(), "127.0.0.1")
	require.Empty(t, got)

	// The same name resolving to loopback only reaches the receiver under a loopback policy:
	// the checked address is the one dialled.
	c = newClient(t, CallbackConfig{AllowAddr: loopback, Resolver: fixedResolver{netip.MustParseAddr("127.0.0.1")}})
	res = c.Post(t.Context(), Callback{URL: "http://hooks.example.com:" + u.Port(), Secret: "s", Body: []byte(`{}`)})
	require.NoError(t, res.Err)
	require.Len(t, got, 1)
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	t.Parallel()
	target, reached := receiver(t, func(w http.ResponseWriter) {})
	srv, _ := receiver(t, func(w http.ResponseWriter) {
		w.Header().Set("Location", target.URL)
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	c := newClient(t, CallbackConfig{AllowAddr: loopback})
	res := c.Post(t.Context(), Callback{URL: srv.URL, Secret: "s", Body: []byte(`{}`)})
	require.NoError(t, res.Err)
	require.Equal(t, http.StatusTemporaryRedirect, res.Status)
	require.False(t, res.OK())
	require.Empty(t, reached)
}

func TestResponseBodyIsBounded(t *testing.T) {
	t.Parallel()
	srv, _ := receiver(t, func(w http.ResponseWriter) { _, _ = w.Write([]byte(strings.Repeat("x", 5000))) })
	c := newClient(t, CallbackConfig{AllowAddr: loopback, MaxResponseBytes: 1000})
	res := c.Post(t.Context(), Callback{URL: srv.URL, Secret: "s", Body: []byte(`{}`)})
	require.NoError(t, res.Err)
	require.Len(t, res.Body, 1000)
	require.True(t, res.Truncated)
}

func TestSlowReceiverTimesOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: the handler returns before the server closes
	c := newClient(t, CallbackConfig{AllowAddr: loopback, Timeout: 50 * time.Millisecond})
	res := c.Post(t.Context(), Callback{URL: srv.URL, Secret: "s", Body: []byte(`{}`)})
	require.Error(t, res.Err)
	require.False(t, res.OK())
}

func TestNoProxyAndBadURLs(t *testing.T) {
	t.Parallel()
	c := newClient(t, CallbackConfig{})
	tr, ok := c.http.Transport.(*http.Transport)
	require.True(t, ok)
	require.Nil(t, tr.Proxy, "environment proxies must never be used")
	for _, u := range []string{"ftp://example.com/x", "/relative", "http://user:pw@example.com/", "::"} {
		res := c.Post(t.Context(), Callback{URL: u, Secret: "s", Body: []byte(`{}`)})
		require.True(t, errors.Is(res.Err, ErrRefused), u)
	}
	_, err := NewCallbackClient(CallbackConfig{Timeout: -1})
	require.Error(t, err)
}

// failingResolver fails every lookup as a real resolver does, naming itself in the error.
type failingResolver struct{}

func (failingResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host", Name: host, Server: "10.255.255.53:53", IsNotFound: true}
}

// TestFailureSentences: what a person is shown is one fixed sentence per class; the resolver,
// the name's addresses and the dialled address appear only in Problem (stored and logged).
func TestFailureSentences(t *testing.T) {
	t.Parallel()
	srv, _ := receiver(t, func(w http.ResponseWriter) { w.WriteHeader(http.StatusTeapot) })
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })

	strict := newClient(t, CallbackConfig{Resolver: fixedResolver{netip.MustParseAddr("10.1.2.3")}})
	unresolvable := newClient(t, CallbackConfig{AllowAddr: loopback, Resolver: failingResolver{}})
	loose := newClient(t, CallbackConfig{AllowAddr: loopback, Timeout: 200 * time.Millisecond})
	post := func(c *CallbackClient, target string) CallbackResult {
		return c.Post(t.Context(), Callback{URL: target, Secret: "s", Body: []byte(`{}`)})
	}
	for _, tc := range []struct {
		name     string
		res      CallbackResult
		sentence string
		detail   string // what Problem keeps and Failure must not show
	}{
		{"Refused", post(strict, "http://internal.example/x"), "its address is not allowed: callbacks go only to public addresses over http(s)", "10.1.2.3"},
		{"Unresolvable", post(unresolvable, "http://db.internal/x"), "its host name could not be resolved", "10.255.255.53"},
		{"Unreachable", post(loose, "http://127.0.0.1:1/x"), "it could not be reached", "127.0.0.1"},
		{"TooSlow", post(loose, slow.URL), "it did not answer in time", "127.0.0.1"},
		{"ErrorStatus", post(loose, "http://127.0.0.1:"+u.Port()+"/x"), "it answered HTTP 418", "418"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.sentence, tc.res.Failure())
			require.Contains(t, tc.res.Problem(), tc.detail)
			if tc.name != "ErrorStatus" {
				require.NotContains(t, tc.res.Failure(), tc.detail)
			}
		})
	}
	require.Empty(t, CallbackResult{Status: 204}.Failure())
}
