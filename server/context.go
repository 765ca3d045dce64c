package server

import (
	"context"

	"github.com/natterchat/natter/persist"
)

type ctxKey int

const (
	correlationKey ctxKey = iota
	callerKey
)

func withCorrelationID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, correlationKey, id)
}

// correlationID is the request's X-Correlation-ID.
func correlationID(ctx context.Context) string {
	id, _ := ctx.Value(correlationKey).(string)
	return id
}

// Caller is who made a request, resolved once by the access middleware.
type Caller struct {
	User persist.User
	// Session is set when a session authenticated the request (bearer sst_ token or cookie).
	Session *persist.Session
	// Via says how the caller was identified: one of the via* constants.
	Via string
}

// Actor is the caller as the store sees it.
func (c *Caller) Actor() persist.Actor { return persist.ActorFor(c.User) }

// How a caller was identified.
const (
	viaBearer      = "bearer"
	viaCookie      = "cookie"
	viaDevHeader   = "dev_header"
	viaDevFallback = "dev_fallback"
)

func withCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey, c)
}

// callerOf returns the request's caller, or nil on public routes without credentials.
func callerOf(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey).(*Caller)
	return c
}
