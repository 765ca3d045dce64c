package persist

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Error is Natter's one application error: a snake_case machine code, a sentence for a person,
// and optionally the cause (never shown to clients). server chooses the HTTP status from the code
// and writes {"error": Message, "code": Code}; realtime maps it to close codes.
type Error struct {
	Code    Code
	Message string
	Err     error
	// RetryAfter, on a rate_limited error, is how long until the refused caller may try again
	// (the HTTP answer's Retry-After); zero when unknown.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Code is a machine-readable error code. Every code is a constant below; server maps each to one
// HTTP status, so a code always answers with the same status.
type Code string

const (
	// CodeInvalidRequest: a field or parameter breaks a rule; the message names it.
	CodeInvalidRequest Code = "invalid_request"
	// CodeInvalidJSON: the body is not one JSON value of the expected shape.
	CodeInvalidJSON Code = "invalid_json"
	// CodeBodyTooLarge: the body passes the size limit.
	CodeBodyTooLarge Code = "body_too_large"
	// CodeUnsupportedMediaType: the endpoint needs another Content-Type.
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	// CodeUnauthenticated: no usable credentials (absent, unknown, expired or revoked).
	CodeUnauthenticated Code = "unauthenticated"
	// CodeInvalidCredentials: a password sign-in failed; one body for every reason.
	CodeInvalidCredentials Code = "invalid_credentials"
	// CodeForbidden: the caller is known but may not do this.
	CodeForbidden Code = "forbidden"
	// CodeMissingScope: a bot token lacks the scope the route needs.
	CodeMissingScope Code = "missing_scope"
	// CodeHumanOnly: the route refuses bot tokens.
	CodeHumanOnly Code = "human_only"
	// CodeCSRF: a cookie-authenticated unsafe request failed the same-origin or CSRF header check.
	CodeCSRF Code = "csrf_failed"
	// CodeCrossSite: a sign-in request came from another site.
	CodeCrossSite Code = "cross_site_request"
	// CodeNotFound: the resource does not exist or is not visible to the caller.
	CodeNotFound Code = "not_found"
	// CodeRouteNotFound: no API route matches the path.
	CodeRouteNotFound Code = "route_not_found"
	// CodeMethodNotAllowed: the route exists but not for this method.
	CodeMethodNotAllowed Code = "method_not_allowed"
	// CodeConflict: the request conflicts with the current state (a duplicate, a stale value).
	CodeConflict Code = "conflict"
	// CodeMessageDeleted: the message is a tombstone; it cannot be edited, replied to, reacted
	// to, pinned or quoted.
	CodeMessageDeleted Code = "message_deleted"
	// CodeTooManyReactions: a message holds the most distinct emoji it may, or the caller has
	// reacted to it as often as one person may (MaxReactionEmoji, MaxReactionsPerPerson).
	CodeTooManyReactions Code = "too_many_reactions"
	// CodeResyncRequired: a cursor is unknown or older than the retained event window.
	CodeResyncRequired Code = "resync_required"
	// CodeRateLimited: too many attempts; try later.
	CodeRateLimited Code = "rate_limited"
	// CodeUpgradeRequired: the client protocol is no longer served here.
	CodeUpgradeRequired Code = "upgrade_required"
	// CodeNotImplemented: the feature is not configured on this server.
	CodeNotImplemented Code = "not_implemented"
	// CodeUnavailable: a dependency (the database) is down.
	CodeUnavailable Code = "unavailable"
	// CodePushDisabled: web push has no server key pair here (or is turned off).
	CodePushDisabled Code = "push_disabled"
	// CodePushAccountMismatch: a push registration names another account than the signed-in one.
	CodePushAccountMismatch Code = "push_account_mismatch"
	// CodeOverCapacity: too many sign-ins are pending (OAuth transactions or desktop grants).
	CodeOverCapacity Code = "over_capacity"
	// CodeProviderFailed: a sign-in provider (GitHub, the OIDC issuer) failed or answered badly.
	CodeProviderFailed Code = "provider_failed"
	// CodeCallbackFailed: an integration's callback refused, failed or could not be reached.
	CodeCallbackFailed Code = "callback_failed"
	// CodeInternal: anything unexpected; the cause is logged, never shown.
	CodeInternal Code = "internal"
)

// Errorf builds an Error for code with a message for a person.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// RateLimited is Errorf(CodeRateLimited, ...) for a caller who may try again after retryAfter.
func RateLimited(retryAfter time.Duration, format string, args ...any) *Error {
	e := Errorf(CodeRateLimited, format, args...)
	e.RetryAfter = retryAfter
	return e
}

// Invalid is Errorf(CodeInvalidRequest, ...).
func Invalid(format string, args ...any) *Error { return Errorf(CodeInvalidRequest, format, args...) }

// NotFound says that a thing (a lowercase noun: "workspace", "message") does not exist for the caller.
func NotFound(thing string) *Error { return Errorf(CodeNotFound, "%s not found", thing) }

// Forbidden is Errorf(CodeForbidden, ...).
func Forbidden(format string, args ...any) *Error { return Errorf(CodeForbidden, format, args...) }

// Conflict is Errorf(CodeConflict, ...).
func Conflict(format string, args ...any) *Error { return Errorf(CodeConflict, format, args...) }

// ErrorOf returns the *Error in err's chain, if any.
func ErrorOf(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// constraintErrors turns a violated constraint, by name, into the sentence a person reads.
// Constraints not listed here become a generic conflict or invalid-request error.
var constraintErrors = map[string]*Error{
	"users_handle_key":                  Conflict("that handle is taken"),
	"users_email_key":                   Conflict("an account with that email already exists"),
	"workspaces_slug_key":               Conflict("that workspace slug is taken; choose another slug"),
	"channels_workspace_name_key":       Conflict("a channel with that name already exists in this workspace"),
	"workspace_members_one_owner":       Conflict("the workspace already has an owner; transfer ownership instead"),
	"slash_commands_active_command_key": Conflict("that command is already registered in this workspace; revoke it first"),
}

// translate is the one place database errors become application errors: no rows → not found;
// unique, foreign-key and check violations by constraint name; everything else stays internal
// (wrapped with %w, never shown to a client).
func translate(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := ErrorOf(err); ok {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return NotFound("resource")
	}
	if Unreachable(err) {
		return &Error{Code: CodeUnavailable,
			Message: "the database is unavailable; try again shortly", Err: err}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if known, ok := constraintErrors[pe.ConstraintName]; ok {
			e := *known
			e.Err = err
			return &e
		}
		switch pe.Code {
		case "23505":
			return &Error{Code: CodeConflict, Message: "that already exists", Err: err}
		case "23503":
			return &Error{Code: CodeInvalidRequest, Message: "a referenced resource does not exist", Err: err}
		case "23514", "22001", "22P02":
			return &Error{Code: CodeInvalidRequest, Message: "a value breaks a rule", Err: err}
		case "22021":
			// A NUL byte or invalid UTF-8 the edge (server's decoders) should have refused already.
			return &Error{Code: CodeInvalidRequest,
				Message: "a text value holds a NUL byte or is not valid UTF-8", Err: err}
		}
	}
	return fmt.Errorf("database: %w", err)
}

// Unreachable reports a failure to reach the database rather than a refusal by it: no
// connection (refused, reset, closed under the statement), a server shutting down or starting
// up, or out of connection slots. translate answers it 503 unavailable at once, never left
// waiting. A cancelled or expired context is not an outage.
func Unreachable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return true
	case errors.As(err, &pe):
		// Class 08 connection exception; 57P01-57P03 admin/crash shutdown and cannot connect now;
		// 53300 too many connections.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" ||
			pe.Code == "53300"
	}
	return false
}

// IsRefusal reports whether err is the store's verdict on a request (an *Error other than an
// outage's 503 unavailable). Callers that keep going through an outage (socket and bot
// rechecks) close or cut off only on a refusal.
func IsRefusal(err error) bool {
	e, ok := ErrorOf(err)
	return ok && !(e.Code == CodeUnavailable && Unreachable(e.Err))
}

// notFoundAs names the missing thing when err is "no rows", and passes any other error through.
func notFoundAs(err error, thing string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return NotFound(thing)
	}
	return err
}
