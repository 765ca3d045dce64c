package server

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The setup-code claim budget per client address: a code has 60 random bits, so ten guesses a
// minute from one address get nowhere.
const (
	setupCodeClaimLimit  = 10
	setupCodeClaimWindow = time.Minute
)

// maxLimiterKeys bounds a limiter's memory. When it is full even after dropping the keys whose
// buckets are full again, it starts over empty: an attacker with that many addresses gains little
// from a reset.
const maxLimiterKeys = 10_000

// keyedLimiter gives each key a token bucket (golang.org/x/time/rate) of limit attempts that
// refills at limit per window: a burst of limit, then one attempt each window/limit. It runs no
// goroutine: idle keys are dropped when the map fills up.
type keyedLimiter struct {
	every rate.Limit
	burst int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

func newKeyedLimiter(limit int, window time.Duration, now func() time.Time) *keyedLimiter {
	return &keyedLimiter{every: rate.Every(window / time.Duration(limit)), burst: limit, now: now,
		buckets: map[string]*rate.Limiter{}}
}

// attempt is one attempt taken from a key's bucket, which release can give back.
type attempt struct {
	limiter     *keyedLimiter
	reservation *rate.Reservation
}

// allow takes one attempt for key and reports whether it is within the budget. A refused attempt
// takes nothing.
func (l *keyedLimiter) allow(key string) (attempt, bool) {
	now := l.now()
	l.mu.Lock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= maxLimiterKeys {
			l.sweepLocked(now)
		}
		b = rate.NewLimiter(l.every, l.burst)
		l.buckets[key] = b
	}
	l.mu.Unlock()
	r := b.ReserveN(now, 1)
	if r.DelayFrom(now) > 0 {
		r.CancelAt(now)
		return attempt{}, false
	}
	return attempt{limiter: l, reservation: r}, true
}

// release gives an attempt back, for one that turned out not to count.
func (a attempt) release() {
	if a.reservation != nil {
		a.reservation.CancelAt(a.limiter.now())
	}
}

// sweepLocked drops the keys whose buckets have refilled (forgetting them changes nothing), or
// everything when none has. l.mu must be held.
func (l *keyedLimiter) sweepLocked(now time.Time) {
	for k, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.burst) {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= maxLimiterKeys {
		clear(l.buckets)
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
