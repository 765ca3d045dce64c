package streams

import "time"

// SetBeforeWake makes the relay call f before it creates a retired workspace's stream again, in
// the goroutine that creates it: a test holds a creation open with it.
func SetBeforeWake(r *Relay, f func(workspaceID string)) { r.beforeWake.Store(&f) }

// SetBeforeRetire makes the relay call f between recording a stream's retirement and deleting
// it, in the sweep's goroutine: a test holds a slow deletion open with it.
func SetBeforeRetire(r *Relay, f func(workspaceID string)) { r.beforeRetire.Store(&f) }

// NextLook is nextLook, the follower's wait before it looks for its stream again.
func NextLook(delay, retry time.Duration, consumed, advised bool) time.Duration {
	return nextLook(delay, retry, consumed, advised)
}
