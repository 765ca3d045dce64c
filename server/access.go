package server

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/natterchat/natter/persist"
)

// audience says which callers a route admits.
type audience int

const (
	// audiencePublic routes need no credentials and ignore any.
	audiencePublic audience = iota + 1
	// audienceOptional routes identify the caller when credentials are present and proceed
	// without a caller when they are not (logout).
	audienceOptional
	// audienceHuman routes admit signed-in humans only; bot tokens get 403.
	audienceHuman
	// audienceMember routes admit humans and, with every scope of the route, bot tokens.
	audienceMember
	// audienceBot routes admit bot tokens only, with the route's scope.
	audienceBot
	// audienceAuthenticated routes admit any caller with credentials: humans and every bot
	// token, whatever its scopes (GET /api/event-types).
	audienceAuthenticated
)

// access is a route's requirement: data in the route table, enforced by one middleware so that
// handlers never look at the caller's kind or scopes.
type access struct {
	audience audience
	scopes   []string // bot-token scopes, all required, for audienceMember and audienceBot
	// headers are set on every answer of the route, refusals by this layer included.
	headers map[string]string
}

// withHeaders returns a with response headers (name, value pairs) that every answer of the
// route carries, including a 401 or 403 written before the handler runs.
func (a access) withHeaders(kv ...string) access {
	a.headers = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		a.headers[kv[i]] = kv[i+1]
	}
	return a
}

var (
	public   = access{audience: audiencePublic}
	optional = access{audience: audienceOptional}
	human    = access{audience: audienceHuman}
	// authenticated admits anyone signed in or holding a live bot token.
	authenticated = access{audience: audienceAuthenticated}
)

// member admits humans, and bot tokens holding every one of scopes (at least one).
func member(scope string, more ...string) access {
	return access{audience: audienceMember, scopes: append([]string{scope}, more...)}
}

// botOnly admits bot tokens holding scope, and nobody else.
func botOnly(scope string) access { return access{audience: audienceBot, scopes: []string{scope}} }

// RouteInfo describes one route of the table, for tests and tools that walk the whole API.
type RouteInfo struct {
	Method  string
	Pattern string
	// Audience is "public", "optional", "human", "member", "bot" or "authenticated".
	Audience string
	// Scope is the (first) bot-token scope a member or bot route needs; "" otherwise.
	Scope string
	// Scopes are all the bot-token scopes a member or bot route needs; empty otherwise.
	Scopes []string
}

// Routes lists every route with its requirement, in table order.
func (s *Server) Routes() []RouteInfo {
	names := map[audience]string{audiencePublic: "public", audienceOptional: "optional", audienceHuman: "human",
		audienceMember: "member", audienceBot: "bot", audienceAuthenticated: "authenticated"}
	var out []RouteInfo
	for _, rt := range s.routeTable() {
		info := RouteInfo{Method: rt.method, Pattern: rt.pattern, Audience: names[rt.access.audience], Scopes: rt.access.scopes}
		if len(info.Scopes) > 0 {
			info.Scope = info.Scopes[0]
		}
		out = append(out, info)
	}
	return out
}

// enforce wraps a handler with its route's requirement: refuse path and query text Postgres
// cannot store, identify the caller, check the requirement, apply the CSRF rule, then call the
// handler with the caller in the context.
func (s *Server) enforce(a access, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range a.headers {
			w.Header().Set(k, v)
		}
		if err := checkRequestText(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		if a.audience == audiencePublic {
			h(w, r)
			return
		}
		caller, err := s.identify(r)
		if err != nil && a.audience != audienceOptional {
			s.writeError(w, r, err)
			return
		}
		if caller == nil && a.audience != audienceOptional {
			s.writeError(w, r, persist.Errorf(persist.CodeUnauthenticated, "sign in, or send a bearer token"))
			return
		}
		if caller != nil {
			if caller.issuedToken != "" {
				s.setSessionCookie(w, r, caller.issuedToken, caller.Session.ExpiresAt)
			}
			if err := s.admit(a, caller); err != nil {
				s.writeError(w, r, err)
				return
			}
			if err := s.checkCSRF(r, caller); err != nil {
				s.writeError(w, r, err)
				return
			}
			caller.correlationID = correlationID(r.Context())
			r = r.WithContext(withCaller(r.Context(), caller))
		}
		h(w, r)
	}
}

// admit checks a caller against a requirement: human routes refuse bot tokens, member routes
// need every scope of the route on a bot token, bot routes admit only bot tokens with the
// scope. The store still checks membership and the token's workspace on every operation.
func (s *Server) admit(a access, c *Caller) error {
	isBot := c.Token != nil
	switch a.audience {
	case audienceHuman:
		if isBot {
			return persist.Errorf(persist.CodeHumanOnly, "this endpoint needs a signed-in person; bot tokens are refused")
		}
	case audienceMember:
		if isBot {
			return requireScopes(c, a.scopes)
		}
	case audienceBot:
		if !isBot {
			return persist.Forbidden("this endpoint is for bot tokens only")
		}
		return requireScopes(c, a.scopes)
	}
	return nil
}

// requireScopes refuses a bot token lacking any of scopes. Codes: missing_scope.
func requireScopes(c *Caller, scopes []string) error {
	for _, scope := range scopes {
		if !c.Actor().HasScope(scope) {
			return persist.Errorf(persist.CodeMissingScope, "this bot token lacks the %s scope", scope)
		}
	}
	return nil
}

// identify resolves the caller in the spec's order: bearer token, session cookie, identity-proxy
// assertion (when configured; it also replaces a stale cookie), the local impersonation header,
// and the development fallback. It returns (nil, nil) when the request carries no credentials.
func (s *Server) identify(r *http.Request) (*Caller, error) {
	ctx := r.Context()
	if token, ok := bearerToken(r); ok {
		switch {
		case strings.HasPrefix(token, persist.PrefixSessionToken):
			return s.sessionCaller(r, token, viaBearer)
		case strings.HasPrefix(token, persist.PrefixBotToken):
			return s.botCaller(r, token)
		}
		return nil, persist.Errorf(persist.CodeUnauthenticated, "the bearer token is not recognised")
	}
	token, err := s.sessionCookie(r)
	if err != nil {
		return nil, err
	}
	assertion := s.proxyAssertion(r)
	if token != "" {
		c, err := s.sessionCaller(r, token, viaCookie)
		if e, ok := persist.ErrorOf(err); assertion == "" || !ok || e.Code != persist.CodeUnauthenticated {
			return c, err
		}
		// The cookie was signed out or expired: the proxy's assertion signs the person in afresh.
	}
	if assertion != "" {
		return s.proxyCaller(r, assertion)
	}
	if id := devUserHeader(r); id != "" && s.cfg.LocalImpersonation && isLocalRequest(r) {
		u, err := persist.ReadV(ctx, s.store, func(tx *persist.Reader) (persist.User, error) { return tx.UserGet(ctx, id) })
		if err != nil && !persist.IsRefusal(err) {
			return nil, err // an outage, not an unknown user
		}
		if err != nil || u.Kind != persist.KindHuman || u.DeletedAt != nil {
			return nil, persist.Errorf(persist.CodeUnauthenticated, "the impersonated user does not exist")
		}
		return &Caller{User: u, Via: viaDevHeader}, nil
	}
	if s.cfg.DevBootstrap && isLocalRequest(r) {
		u, err := s.devFallbackUser(ctx)
		if e, ok := persist.ErrorOf(err); ok && e.Code == persist.CodeNotFound {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return &Caller{User: u, Via: viaDevFallback}, nil
	}
	return nil, nil
}

// devFallbackEntry is the development fallback's user as last read.
type devFallbackEntry struct {
	at   time.Time
	user persist.User
}

// devFallbackUser is the development fallback's user, the first one. Requests share one look-up
// a second, as sessions are answered from memory (the profile shown by GET /api/me is read
// afresh there).
func (s *Server) devFallbackUser(ctx context.Context) (persist.User, error) {
	if e := s.devFallback.Load(); e != nil && time.Since(e.at) < time.Second {
		return e.user, nil
	}
	u, err := persist.ReadV(ctx, s.store, func(tx *persist.Reader) (persist.User, error) { return tx.UserFirst(ctx) })
	if err == nil {
		s.devFallback.Store(&devFallbackEntry{at: time.Now(), user: u})
	}
	return u, err
}

func (s *Server) sessionCaller(r *http.Request, token, via string) (*Caller, error) {
	ctx := r.Context()
	type resolved struct {
		s persist.Session
		u persist.User
	}
	if s.realtime != nil {
		// Every request names its session, and handshakes come in storms: the hub answers from
		// memory, kept in step with sign-outs by this replica's commits and the others'
		// announcements.
		sess, u, err := s.realtime.ResolveSession(ctx, token)
		if err != nil {
			return nil, err
		}
		return &Caller{User: u, Session: &sess, Via: via}, nil
	}
	res, err := persist.ReadV(ctx, s.store, func(tx *persist.Reader) (resolved, error) {
		sess, u, err := tx.SessionResolve(ctx, token)
		return resolved{sess, u}, err
	})
	if err != nil {
		return nil, err
	}
	return &Caller{User: res.u, Session: &res.s, Via: via}, nil
}

// botCaller resolves a ccb_ bearer token to its bot, recording the use: on every request and
// handshake alike (SPEC §Bot token), in one statement that does not wait for the disk.
func (s *Server) botCaller(r *http.Request, token string) (*Caller, error) {
	t, u, err := s.store.BotTokenAuthenticate(r.Context(), token)
	if err != nil {
		return nil, err
	}
	return &Caller{User: u, Token: &t, Via: viaBotToken}, nil
}

// bearerToken returns the token of an Authorization: Bearer header or, on a WebSocket upgrade
// (browsers cannot set headers there), of a natter.bearer.<token> or clickclack.bearer.<token>
// subprotocol.
func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return subprotocolToken(r)
	}
	return strings.TrimSpace(token), true
}

func subprotocolToken(r *http.Request) (string, bool) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return "", false
	}
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			p = strings.TrimSpace(p)
			for _, prefix := range []string{"natter.bearer.", "clickclack.bearer."} {
				if token, ok := strings.CutPrefix(p, prefix); ok && token != "" {
					return token, true
				}
			}
		}
	}
	return "", false
}

// sessionCookie returns the value of the active session cookie, "" when absent. Two cookies
// with the active name are refused: a sibling subdomain could have planted one.
func (s *Server) sessionCookie(r *http.Request) (string, error) {
	var value string
	n := 0
	for _, c := range r.Cookies() {
		if c.Name == s.cookieName {
			value = c.Value
			n++
		}
	}
	if n > 1 {
		return "", persist.Errorf(persist.CodeUnauthenticated, "the request carries more than one %s cookie; clear cookies for this site and sign in again", s.cookieName)
	}
	return value, nil
}

// presentedSessionToken is the session token a request carries, by the precedence of identify.
func (s *Server) presentedSessionToken(r *http.Request) string {
	if token, ok := bearerToken(r); ok {
		return token
	}
	token, _ := s.sessionCookie(r)
	return token
}

func devUserHeader(r *http.Request) string {
	if v := r.Header.Get("X-Natter-User"); v != "" {
		return v
	}
	return r.Header.Get("X-ClickClack-User")
}

// isLocalRequest reports whether the request comes from a loopback client and names a local
// host, the condition of every development shortcut.
func isLocalRequest(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback() && isLocalHost(r.Host)
}

func isLocalHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkCSRF applies to unsafe requests authenticated by cookie or identity-proxy assertion
// (which a browser also sends on its own): the browser must say the request is same-origin
// (Origin or Sec-Fetch-Site) and send X-Natter-CSRF: 1, a header no cross-site form can set.
//
// The development header and fallback need no credentials at all, so any page a developer
// visits could use them: their unsafe requests must be same-origin too (a cross-site fetch
// always carries Origin or Sec-Fetch-Site), while curl and the CLI, which send neither, and
// bearer tokens are unaffected (issue 22, defect 6). They need no X-Natter-CSRF header.
func (s *Server) checkCSRF(r *http.Request, c *Caller) error {
	if isSafeMethod(r.Method) {
		return nil
	}
	if c.Via == viaDevHeader || c.Via == viaDevFallback {
		if !s.sameOrigin(r) {
			return persist.Errorf(persist.CodeCSRF, "cross-site requests are refused for the development user")
		}
		return nil
	}
	if c.Via != viaCookie && c.Via != viaProxy {
		return nil
	}
	if !s.sameOrigin(r) {
		return persist.Errorf(persist.CodeCSRF, "cross-site requests with a session cookie are refused")
	}
	v := r.Header.Get("X-Natter-CSRF")
	if v == "" {
		v = r.Header.Get("X-ClickClack-CSRF")
	}
	if v != "1" {
		return persist.Errorf(persist.CodeCSRF, "send the header X-Natter-CSRF: 1 with requests authenticated by cookie")
	}
	return nil
}

func isSafeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// sameOrigin reports whether a browser request comes from this site: Sec-Fetch-Site, when sent,
// must be same-origin or none; Origin, when sent, must be the request's own origin or the
// configured public origin.
func (s *Server) sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	return s.allowedOrigin(r, origin)
}

// allowedOrigin reports whether origin is the request host's own or the configured public one.
func (s *Server) allowedOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if s.publicOrigin != "" && strings.EqualFold(origin, s.publicOrigin) {
		return true
	}
	return strings.EqualFold(u.Host, r.Host)
}
