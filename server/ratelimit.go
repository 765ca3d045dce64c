package server

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// The setup-code claim budget per client address: a code has 60 random bits, so ten guesses a
// minute from one address get nowhere.
const (
	setupCodeClaimLimit  = 10
	setupCodeClaimWindow = time.Minute
)

// maxLimiterKeys bounds a limiter's memory. When it is full even after dropping the finished
// windows, it starts over empty: an attacker with that many addresses gains little from a reset.
const maxLimiterKeys = 10_000

// windowLimiter allows limit attempts per key in each fixed window. It runs no goroutine: expired
// windows are dropped when the map fills up.
type windowLimiter struct {
	limit  int
	window time.Duration
	now    func() time.Time

	mu   sync.Mutex
	hits map[string]*windowCount
}

type windowCount struct {
	start time.Time
	n     int
}

func newWindowLimiter(limit int, window time.Duration, now func() time.Time) *windowLimiter {
	return &windowLimiter{limit: limit, window: window, now: now, hits: map[string]*windowCount{}}
}

// allow records one attempt for key and reports whether it is within the budget.
func (l *windowLimiter) allow(key string) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.hits[key]
	if ok && now.Sub(c.start) >= l.window {
		ok = false
	}
	if !ok {
		if len(l.hits) >= maxLimiterKeys {
			l.sweepLocked(now)
		}
		c = &windowCount{start: now}
		l.hits[key] = c
	}
	c.n++
	return c.n <= l.limit
}

// release takes back one attempt recorded for key in its current window, for an attempt that
// turned out not to count.
func (l *windowLimiter) release(key string) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.hits[key]; ok && c.n > 0 && now.Sub(c.start) < l.window {
		c.n--
	}
}

// sweepLocked drops finished windows, or everything when none has finished. l.mu must be held.
func (l *windowLimiter) sweepLocked(now time.Time) {
	for k, c := range l.hits {
		if now.Sub(c.start) >= l.window {
			delete(l.hits, k)
		}
	}
	if len(l.hits) >= maxLimiterKeys {
		clear(l.hits)
	}
}

// clientAddress is the limiter key of a request: the peer's IP, or its /64 for IPv6, where one
// client commonly holds a whole prefix. Natter trusts no forwarding header here.
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return ip.String()
}
