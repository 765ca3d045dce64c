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
	// Token is set when a bot token authenticated the request: the bot is User, bound to the
	// token's workspace with its scopes.
	Token *persist.BotToken
	// Via says how the caller was identified: one of the via* constants.
	Via string
	// issuedToken is the raw token of a session started by this very request (identity-proxy
	// sign-in), which the response sets as the session cookie.
	issuedToken string
	// correlationID is the request's X-Correlation-ID, carried into the store with the actor.
	correlationID string
}

// Actor is the caller as the store sees it: for a bot token, the bot with the token's workspace,
// scopes and (for a user bot) owner or (for a service bot) the token's issuer.
func (c *Caller) Actor() persist.Actor {
	a := persist.ActorFor(c.User)
	if c.Token != nil {
		a = persist.BotActor(*c.Token, c.User)
	}
	a.CorrelationID = c.correlationID
	return a
}

// How a caller was identified.
const (
	viaBearer      = "bearer"
	viaBotToken    = "bot_token"
	viaCookie      = "cookie"
	viaProxy       = "proxy"
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
