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

// windowLimiter allows limit attempts per key in each fixed window. The counts are kept in
// Postgres, so every replica spends from the same budget; finished windows are deleted now and
// then by whichever replica notices first.
type windowLimiter struct {
	store  *persist.Store
	budget string // names the budget in the shared table
	limit  int
	window time.Duration

	prunedAt atomic.Int64 // unix nanoseconds of this process's last prune
}

func newWindowLimiter(store *persist.Store, budget string, limit int, window time.Duration) *windowLimiter {
	return &windowLimiter{store: store, budget: budget, limit: limit, window: window}
}

// allow records one attempt for key and reports whether it is within the budget.
func (l *windowLimiter) allow(ctx context.Context, key string) (bool, error) {
	l.prune(ctx)
	return persist.WithTxV(ctx, l.store, func(tx *persist.Tx) (bool, error) {
		return tx.AttemptTake(ctx, l.budget, key, l.limit, l.window)
	})
}

// release takes back one attempt recorded for key in its current window, for an attempt that
// turned out not to count. A failure only leaves the attempt counted.
func (l *windowLimiter) release(ctx context.Context, key string) {
	_ = l.store.WithTx(ctx, func(tx *persist.Tx) error {
		return tx.AttemptGiveBack(ctx, l.budget, key, l.window)
	})
}

// prune deletes the budget's finished windows at most once a window per process, so the table
// holds roughly the keys of the running windows.
func (l *windowLimiter) prune(ctx context.Context) {
	now := l.store.Now().UnixNano()
	last := l.prunedAt.Load()
	if now-last < int64(l.window) || !l.prunedAt.CompareAndSwap(last, now) {
		return
	}
	_ = l.store.WithTx(ctx, func(tx *persist.Tx) error {
		_, err := tx.AttemptBudgetsPrune(ctx, l.budget, l.window)
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
