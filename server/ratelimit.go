package server

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/natterchat/natter/persist"
)

// The setup-code claim budget per client address: a code has 60 random bits, so ten guesses a
// minute from one address get nowhere.
const (
	setupCodeClaimLimit  = 10
	setupCodeClaimWindow = time.Minute
)

// keyedLimiter gives each key a token bucket of limit attempts that refills at limit per window:
// a burst of limit, then one attempt each window/limit. The buckets are kept in Postgres
// (persist.Tx.AttemptTake), so every replica spends from the same one; buckets that are full
// again are deleted now and then by whichever replica notices first.
type keyedLimiter struct {
	store  *persist.Store
	budget string // names the budget in the shared table
	limit  int
	window time.Duration
	// refusal is the sentence of a refused attempt's 429.
	refusal string

	prunedAt atomic.Int64 // unix nanoseconds of this process's last prune
}

func newKeyedLimiter(store *persist.Store, budget string, limit int, window time.Duration, refusal string) *keyedLimiter {
	return &keyedLimiter{store: store, budget: budget, limit: limit, window: window, refusal: refusal}
}

// attempt is one attempt taken from a key's bucket, which release can give back.
type attempt struct {
	limiter *keyedLimiter
	key     string
}

// allow takes one attempt for key. A refused attempt takes nothing and is a rate_limited error
// saying when the bucket holds an attempt again (the answer's Retry-After).
func (l *keyedLimiter) allow(ctx context.Context, key string) (attempt, error) {
	l.prune(ctx)
	wait, err := persist.WithTxV(ctx, l.store, func(tx *persist.Tx) (time.Duration, error) {
		return tx.AttemptTake(ctx, l.budget, key, l.limit, l.window)
	})
	if err != nil {
		return attempt{}, err
	}
	if wait > 0 {
		return attempt{}, persist.RateLimited(wait, "%s", l.refusal)
	}
	return attempt{limiter: l, key: key}, nil
}

// release gives an attempt back, for one that turned out not to count. A failure only leaves the
// attempt spent.
func (a attempt) release(ctx context.Context) {
	if a.limiter == nil {
		return
	}
	l := a.limiter
	_ = l.store.WithTx(ctx, func(tx *persist.Tx) error {
		return tx.AttemptGiveBack(ctx, l.budget, a.key, l.limit, l.window)
	})
}

// prune deletes the budget's full buckets at most once a window per process, so the table holds
// roughly the keys active in the last window.
func (l *keyedLimiter) prune(ctx context.Context) {
	now := l.store.Now().UnixNano()
	last := l.prunedAt.Load()
	if now-last < int64(l.window) || !l.prunedAt.CompareAndSwap(last, now) {
		return
	}
	_ = l.store.WithTx(ctx, func(tx *persist.Tx) error {
		_, err := tx.AttemptBudgetsPrune(ctx, l.budget)
		return err
	})
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
