package server

import (
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func pgxQueryRow(t *testing.T, url, sql string, args ...any) pgx.Row {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(t.Context()) })
	return conn.QueryRow(t.Context(), sql, args...)
}

// TestKeyedLimiter: token buckets kept in the database, so limiters of two replicas (two
// stores on one database) spend from one bucket per key.
func TestKeyedLimiter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	url := persisttest.URL(t)
	replica := func() *keyedLimiter {
		store, err := persist.Open(t.Context(), persist.Config{URL: url, MaxConns: 2, Clock: clock})
		require.NoError(t, err)
		t.Cleanup(store.Close)
		return newKeyedLimiter(store, "test", 2, time.Minute, "too many tests")
	}
	a, b := replica(), replica()
	allow := func(l *keyedLimiter, key string) bool {
		_, err := l.allow(t.Context(), key)
		if e, limited := persist.ErrorOf(err); limited && e.Code == persist.CodeRateLimited {
			return false
		}
		require.NoError(t, err)
		return true
	}
	require.True(t, allow(a, "a"))
	first, err := b.allow(t.Context(), "a")
	require.NoError(t, err)
	require.False(t, allow(a, "a"), "the third attempt at once is refused, whichever replica gets it")
	require.True(t, allow(b, "b"), "budgets are per key")
	first.release(t.Context())
	require.True(t, allow(a, "a"), "a released attempt is given back")
	require.False(t, allow(b, "a"))
	advance(29 * time.Second)
	require.False(t, allow(a, "a"), "the bucket refills one attempt each window/limit")
	advance(time.Second)
	require.True(t, allow(b, "a"))
	require.False(t, allow(a, "a"))
	advance(time.Minute)
	require.True(t, allow(a, "a"), "a whole window refills the whole budget")
	require.True(t, allow(b, "a"))

	advance(2 * time.Minute)
	require.True(t, allow(a, "c"))
	var rows int
	require.NoError(t, pgxQueryRow(t, url, `SELECT count(*) FROM attempt_budgets WHERE full_at <= $1`, clock()).Scan(&rows))
	require.Zero(t, rows, "buckets full again are pruned")
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
