package server

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestKeyedLimiter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newKeyedLimiter(2, time.Minute, func() time.Time { return now })
	allow := func(key string) bool {
		_, ok := l.allow(key)
		return ok
	}
	require.True(t, allow("a"))
	first, ok := l.allow("a")
	require.True(t, ok)
	require.False(t, allow("a"), "the third attempt at once is refused")
	require.True(t, allow("b"), "budgets are per key")
	first.release()
	require.True(t, allow("a"), "a released attempt is given back")
	require.False(t, allow("a"))
	now = now.Add(29 * time.Second)
	require.False(t, allow("a"), "the bucket refills one attempt each window/limit")
	now = now.Add(time.Second)
	require.True(t, allow("a"))
	require.False(t, allow("a"))
	now = now.Add(time.Minute)
	require.True(t, allow("a"), "a whole window refills the whole budget")
	require.True(t, allow("a"))

	for i := range maxLimiterKeys + 50 {
		require.True(t, allow(fmt.Sprint("k", i)))
	}
	require.LessOrEqual(t, len(l.buckets), maxLimiterKeys, "memory stays bounded")
}

func TestClientAddress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ remote, want string }{
		{"203.0.113.7:5000", "203.0.113.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
	} {
		r := httptest.NewRequest("POST", "/api/bot-setup-codes/claim", nil)
		r.RemoteAddr = tc.remote
		r.Header.Set("X-Forwarded-For", "198.51.100.1")
		require.Equal(t, tc.want, clientAddress(r), tc.remote)
	}
}

func TestParseAPIBaseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"https://Chat.Example.com", "https://chat.example.com"},
		{"https://chat.example.com/", "https://chat.example.com"},
		{"https://example.com/natter/", "https://example.com/natter"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"http://localhost:8080/api-root", "http://localhost:8080/api-root"},
	} {
		got, err := ParseAPIBaseURL(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	for _, bad := range []string{"chat.example.com", "ftp://chat.example.com", "http://chat.example.com",
		"https://user:pw@chat.example.com", "https://chat.example.com/?x=1", "https://chat.example.com/#frag", ""} {
		_, err := ParseAPIBaseURL(bad)
		require.ErrorContains(t, err, "--api-base-url", bad)
	}
}
