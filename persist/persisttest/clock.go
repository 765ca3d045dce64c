package persisttest

import (
	"sync"
	"time"
)

// Clock is a settable clock for a store (and so for the server above it): tests pin "now" and
// move it forward instead of sleeping.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts at a fixed instant, so that dates in test output do not depend on the day.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

// NewClockAt starts at now.
func NewClockAt(now time.Time) *Clock { return &Clock{now: now} }

// Now is the clock's current time; pass it as the store's clock (WithClock(c.Now)).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
