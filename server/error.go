package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/natterchat/natter/persist"
)

// retryAfterOutage is the Retry-After (seconds) of a 503 during a database outage: long enough
// not to hammer a recovering database, short enough that clients come back soon after.
const retryAfterOutage = "5"

// writeError is the only writer of error responses: a *persist.Error answers with the status of
// its code (statusFor), its code and its message; a database that cannot be reached is a 503
// unavailable with Retry-After, logged by outageLog; anything else is a 500 with a fixed
// sentence, its cause logged once with the correlation id. Database and internal text never
// reach the client.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := persist.ErrorOf(err)
	if !ok && persist.Unreachable(err) { // one that did not pass through the store's translation
		e, ok = &persist.Error{Code: persist.CodeUnavailable,
			Message: "the database is unavailable; try again shortly", Err: err}, true
	}
	if ok {
		if e.Code == persist.CodeUnavailable && persist.Unreachable(e.Err) {
			w.Header().Set("Retry-After", retryAfterOutage)
		}
		if e.RetryAfter > 0 {
			w.Header().Set("Retry-After", retryAfterSeconds(e.RetryAfter))
		}
		status := statusFor(e.Code)
		if e.Code == persist.CodeUnavailable && persist.Unreachable(e.Err) {
			s.outage.refused(s.logger, err)
		} else if status >= 500 && status != http.StatusNotImplemented { // 501 is a setting, not a failure
			s.logger.Error("request failed", "correlation_id", correlationID(r.Context()), "code", e.Code, "error", err)
		}
		writeJSON(w, status, errorBody{Error: e.Message, Code: e.Code})
		return
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The client went away; nobody reads this answer.
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	s.logger.Error("request failed", "correlation_id", correlationID(r.Context()), "error", err)
	writeJSON(w, http.StatusInternalServerError, errorBody{Error: "something went wrong on our side; it has been logged", Code: persist.CodeInternal})
}

// outageLogEvery is how often a database outage is logged: while the database cannot be
// reached every request is refused within milliseconds and clients retry, so a line per refusal
// would flood the log with thousands of copies of one fact.
const outageLogEvery = 10 * time.Second

// outageLog logs the refusals of a database outage at warn level: the first at once, then at
// most one line per outageLogEvery, each with the number of requests refused since the last.
type outageLog struct {
	mu    sync.Mutex
	last  time.Time
	count int
}

func (o *outageLog) refused(logger *slog.Logger, err error) {
	o.mu.Lock()
	o.count++
	now := time.Now()
	if !o.last.IsZero() && now.Sub(o.last) < outageLogEvery {
		o.mu.Unlock()
		return
	}
	n := o.count
	o.last, o.count = now, 0
	o.mu.Unlock()
	logger.Warn("the database is unavailable; requests are answered 503", "refused", n,
		"next_line_within", outageLogEvery.String(), "error", err)
}

// retryAfterSeconds is a Retry-After of d in whole seconds, rounded up: a client that waits
// what it is told is never refused again for the same reason.
func retryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

type errorBody struct {
	Error string       `json:"error"`
	Code  persist.Code `json:"code"`
}

// statusFor is the one place an error code becomes an HTTP status; a code missing from the table
// answers 500, and a test checks that every code persist defines is in it.
func statusFor(code persist.Code) int {
	if status, ok := statusOf[code]; ok {
		return status
	}
	return http.StatusInternalServerError
}

var statusOf = map[persist.Code]int{
	persist.CodeInvalidRequest:       http.StatusBadRequest,
	persist.CodeInvalidJSON:          http.StatusBadRequest,
	persist.CodeBodyTooLarge:         http.StatusRequestEntityTooLarge,
	persist.CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	persist.CodeUnauthenticated:      http.StatusUnauthorized,
	persist.CodeInvalidCredentials:   http.StatusUnauthorized,
	persist.CodeForbidden:            http.StatusForbidden,
	persist.CodeMissingScope:         http.StatusForbidden,
	persist.CodeHumanOnly:            http.StatusForbidden,
	persist.CodeCSRF:                 http.StatusForbidden,
	persist.CodeCrossSite:            http.StatusForbidden,
	persist.CodeNotFound:             http.StatusNotFound,
	persist.CodeRouteNotFound:        http.StatusNotFound,
	persist.CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	persist.CodeConflict:             http.StatusConflict,
	persist.CodeMessageDeleted:       http.StatusConflict,
	persist.CodeTooManyReactions:     http.StatusConflict,
	persist.CodeResyncRequired:       http.StatusGone,
	persist.CodeRateLimited:          http.StatusTooManyRequests,
	persist.CodeUpgradeRequired:      http.StatusUpgradeRequired,
	persist.CodeNotImplemented:       http.StatusNotImplemented,
	persist.CodeUnavailable:          http.StatusServiceUnavailable,
	persist.CodePushDisabled:         http.StatusNotFound,
	persist.CodePushAccountMismatch:  http.StatusConflict,
	persist.CodeOverCapacity:         http.StatusServiceUnavailable,
	persist.CodeProviderFailed:       http.StatusBadGateway,
	persist.CodeCallbackFailed:       http.StatusBadGateway,
	persist.CodeInternal:             http.StatusInternalServerError,
}
