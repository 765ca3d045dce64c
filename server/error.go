package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/natterchat/natter/persist"
)

// retryAfterOutage is the Retry-After (seconds) of a 503 during a database outage: long enough
// not to hammer a recovering database, short enough that clients come back soon after.
const retryAfterOutage = "5"

// writeError is the only writer of error responses: a *persist.Error answers with its status,
// code and message; a database that cannot be reached is a 503 unavailable with Retry-After;
// anything else is a 500 with a fixed sentence, its cause logged once with the correlation id.
// Database and internal text never reach the client.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := persist.ErrorOf(err)
	if !ok && persist.Unreachable(err) { // one that did not pass through the store's translation
		e, ok = &persist.Error{Status: http.StatusServiceUnavailable, Code: persist.CodeUnavailable,
			Message: "the database is unavailable; try again shortly", Err: err}, true
	}
	if ok {
		if e.Code == persist.CodeUnavailable && persist.Unreachable(e.Err) {
			w.Header().Set("Retry-After", retryAfterOutage)
		}
		if e.Status >= 500 && e.Status != http.StatusNotImplemented { // 501 is a setting, not a failure
			s.logger.Error("request failed", "correlation_id", correlationID(r.Context()), "code", e.Code, "error", err)
		}
		writeJSON(w, e.Status, errorBody{Error: e.Message, Code: e.Code})
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

type errorBody struct {
	Error string       `json:"error"`
	Code  persist.Code `json:"code"`
}
