package push

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryAfter reads a Retry-After header, in seconds or as an HTTP date, as a wait from now;
// zero when absent, malformed or already past. The caller caps it (persist.PushBackoff).
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		// Anything past a day is capped later; this only keeps the multiplication in range.
		return time.Duration(min(secs, 365*24*3600)) * time.Second
	}
	at, err := http.ParseTime(h)
	if err != nil || !at.After(now) {
		return 0
	}
	return at.Sub(now)
}
