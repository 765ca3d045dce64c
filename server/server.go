package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/outbound/email"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/realtime"
	"github.com/natterchat/natter/server/accessproxy"
	"github.com/natterchat/natter/server/blob"
	"github.com/natterchat/natter/server/passwordhash"
	"github.com/natterchat/natter/server/signin"
	"github.com/natterchat/natter/server/web"
)

// Config configures the HTTP API.
type Config struct {
	// Store is the database. Required.
	Store *persist.Store
	// Logger receives the access log and errors. Default slog.Default().
	Logger *slog.Logger
	// PublicURL is the origin browsers use, such as https://chat.example.com; it sets the
	// accepted Origin and the cookie's Secure flag. Default "" (derived from each request).
	PublicURL string
	// APIBaseURL is the trusted canonical base of this API as bot installers should store it,
	// such as https://chat.example.com or https://example.com/natter (a path prefix is kept):
	// setup-code responses name it as api_base_url and build claim_url on it. Default ""
	// (PublicURL, else the scheme and host each request was sent to).
	APIBaseURL string
	// DevBootstrap enables the development fallback identity for local requests. Default false.
	DevBootstrap bool
	// DevAuth lets local clients mint magic links through the API. Default false.
	DevAuth bool
	// RemoteAvatars lets the web client load avatars from other hosts (Gravatar, GitHub), which
	// tells those hosts who looks at whom. Default false: initials unless the picture is here.
	RemoteAvatars bool
	// WebVersion names the web client's bundle, which open clients compare on each reconnect.
	// Default "": web.Version as set at build time, else a digest of the embedded files.
	WebVersion string
	// LocalImpersonation accepts X-Natter-User (or X-ClickClack-User) from loopback clients on a
	// local host. Off in production: behind a reverse proxy on the same machine that does not
	// forward the Host header, every request would look local. Default false.
	LocalImpersonation bool
	// Metrics serves /metrics. Default false.
	Metrics bool
	// CookieNamespace namespaces the session cookie (cc_session_<namespace>), so several
	// deployments can share a parent domain. Default "" (cc_session).
	CookieNamespace string
	// AccessLog writes one log line per request. Default false.
	AccessLog bool
	// ShutdownTimeout bounds the drain of active requests at shutdown. Default 5s.
	ShutdownTimeout time.Duration
	// StallTimeout is how long a caller may stop reading its response or sending its request
	// body before its connection is closed; every byte that moves starts it again. Upgrades
	// to the realtime socket are not covered (the socket has its own ping and idle limits).
	// Default 60s.
	StallTimeout time.Duration
	// Realtime is the WebSocket hub; without it the realtime socket and ephemeral routes
	// answer 503. Default nil.
	Realtime *realtime.Hub
	// Callbacks makes integrations' outgoing calls (slash-command callbacks). Default a
	// client with the strict address policy (outbound.PublicOnly).
	Callbacks *outbound.CallbackClient
	// DisableWebPush turns web push off: GET /api/me/push says enabled=false and the push write
	// endpoints answer 404, whatever keys the database holds. Default false (on when a server
	// key pair exists).
	DisableWebPush bool
	// PushPolicy decides which addresses a push subscription's endpoint may name. Default
	// outbound.PublicOnly.
	PushPolicy outbound.Policy
	// Collectors are other components' metrics (relay, realtime), served at /metrics beside
	// the server's own. Default none.
	Collectors []prometheus.Collector
	// ReadyChecks are what /readyz asks besides the database, by name: each returns nil when
	// its component does its work (the relay: events reach the streams). Default none.
	ReadyChecks map[string]func(context.Context) error
	// PasswordAuth turns on password sign-in and change; off, both answer 501. Default false.
	PasswordAuth bool
	// Passwords derives and checks password hashes; its slots bound derivations for the whole
	// process. Default nil: a Hasher with passwordhash.DefaultParams, when PasswordAuth is on.
	Passwords *passwordhash.Hasher
	// IdentityProxy turns on sign-in by a trusted identity proxy's assertion (Cloudflare
	// Access) when TeamDomain and Audience are set; both empty leaves the header ignored. Its
	// clock defaults to the store's. Default off.
	IdentityProxy accessproxy.Config
	// GitHub is GitHub OAuth sign-in (signin.NewGitHub); without it the GitHub start routes
	// answer 501. Default nil.
	GitHub *signin.GitHub
	// OIDC is the discovered OIDC provider (signin.DiscoverOIDC); without it, or without
	// PublicURL, the OIDC routes answer 501. Default nil.
	OIDC *signin.OIDC
	// DesktopScheme is the desktop app's callback scheme for handoff protocol 2. Default
	// "natter".
	DesktopScheme string
	// LegacyDesktopScheme is the callback scheme of handoff protocol 1. Default "natter-legacy".
	LegacyDesktopScheme string
	// OAuthLimits bound pending OAuth transactions and desktop grants. Default
	// persist.DefaultOAuthLimits (8,192 transactions, 8 per browser, 4,096 grants).
	OAuthLimits persist.OAuthLimits
	// Uploads stores upload objects; without it the upload routes answer 503. Default nil.
	Uploads blob.Store
	// Mail sends email (sign-in links, invitations); it needs PublicURL for the links. Default
	// nil: email is off.
	Mail *email.Sender
}

// Server is the HTTP API.
type Server struct {
	cfg          Config
	store        *persist.Store
	logger       *slog.Logger
	metrics      *metrics
	apiBaseURL   string        // the validated Config.APIBaseURL
	claimLimiter *keyedLimiter // setup-code claims per client address
	router       chi.Router
	cookieName   string
	publicOrigin string
	realtime     *realtime.Hub
	callbacks    *outbound.CallbackClient

	// Optional sign-in methods (server/password.go, server/proxy.go).
	passwords   *passwordhash.Hasher  // nil when password sign-in is off
	loginLimits passwordLoginLimits   // password login attempts
	proxy       *accessproxy.Verifier // nil when identity-proxy sign-in is off
	pushPolicy  outbound.Policy
	blobs       blob.Store
	web         *web.Handler // the browser client, served at every path outside /api
	// devFallback is the development fallback's user, for WebSocket upgrades (access.go).
	devFallback atomic.Pointer[devFallbackEntry]
	outage      outageLog // refusals during a database outage (server/error.go)
	mail        *mailer   // nil while email is off (server/email.go)
}

// New validates cfg and builds the router.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("server: Config.Store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 5 * time.Second
	}
	if cfg.StallTimeout == 0 {
		cfg.StallTimeout = 60 * time.Second
	}
	if cfg.Callbacks == nil {
		c, err := outbound.NewCallbackClient(outbound.CallbackConfig{})
		if err != nil {
			return nil, err
		}
		cfg.Callbacks = c
	}
	s := &Server{cfg: cfg, store: cfg.Store, logger: cfg.Logger, metrics: newMetrics(), cookieName: "cc_session",
		realtime: cfg.Realtime, callbacks: cfg.Callbacks, pushPolicy: cfg.PushPolicy, blobs: cfg.Uploads}
	if s.pushPolicy == nil {
		s.pushPolicy = outbound.PublicOnly
	}
	for _, c := range cfg.Collectors {
		if err := s.metrics.registry.Register(c); err != nil {
			return nil, fmt.Errorf("server: register metrics: %w", err)
		}
	}
	if cfg.PublicURL != "" {
		origin, err := ParsePublicURL(cfg.PublicURL)
		if err != nil {
			return nil, err
		}
		s.publicOrigin = origin
	}
	if cfg.APIBaseURL != "" {
		base, err := ParseAPIBaseURL(cfg.APIBaseURL)
		if err != nil {
			return nil, err
		}
		s.apiBaseURL = base
	}
	if cfg.CookieNamespace != "" {
		if !ValidCookieNamespace(cfg.CookieNamespace) {
			return nil, errors.New("--cookie-namespace may contain only letters, digits, '-' and '_' (at most 32)")
		}
		s.cookieName = "cc_session_" + cfg.CookieNamespace
	}
	if cfg.DesktopScheme == "" {
		cfg.DesktopScheme = signin.DefaultDesktopScheme
	}
	if cfg.LegacyDesktopScheme == "" {
		cfg.LegacyDesktopScheme = signin.DefaultLegacyDesktopScheme
	}
	if err := signin.CheckScheme(cfg.DesktopScheme); err != nil {
		return nil, fmt.Errorf("--desktop-scheme: %w", err)
	}
	if err := signin.CheckScheme(cfg.LegacyDesktopScheme); err != nil {
		return nil, fmt.Errorf("--legacy-desktop-scheme: %w", err)
	}
	cfg.OAuthLimits = cfg.OAuthLimits.WithDefaults()
	s.cfg = cfg
	s.claimLimiter = newKeyedLimiter(cfg.Store, "setup_code_claim_address", setupCodeClaimLimit, setupCodeClaimWindow,
		"too many setup-code attempts from this address; wait a minute")
	if err := s.configureSignIn(cfg); err != nil {
		return nil, err
	}
	if err := s.configureMail(cfg); err != nil {
		return nil, err
	}
	client, err := web.New(web.Config{Version: cfg.WebVersion, DevAuth: cfg.DevAuth, Password: cfg.PasswordAuth, Email: s.mail != nil, Providers: s.AuthMethods(),
		RemoteAvatars: cfg.RemoteAvatars})
	if err != nil {
		return nil, err
	}
	s.web = client
	s.router = s.buildRouter()
	return s, nil
}

// ParsePublicURL checks a --public-url value and returns its origin. Non-loopback origins must
// be https; none may carry a path, credentials, query or fragment.
func ParsePublicURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("--public-url %q must be an absolute http(s) URL such as https://chat.example.com", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("--public-url %q must be an origin only: no path, credentials, query or fragment", raw)
	}
	if u.Scheme == "http" && !isLocalHost(u.Host) {
		return "", fmt.Errorf("--public-url %q must use https (plain http is allowed only for loopback development)", raw)
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}

// ParseAPIBaseURL checks an --api-base-url value: an absolute http(s) URL, https unless loopback,
// with an optional path prefix but no credentials, query or fragment. It returns the URL without
// a trailing slash.
func ParseAPIBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("--api-base-url %q must be an absolute http(s) URL such as https://chat.example.com", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return "", fmt.Errorf("--api-base-url %q may carry a path prefix but no credentials, query or fragment", raw)
	}
	if u.Scheme == "http" && !isLocalHost(u.Host) {
		return "", fmt.Errorf("--api-base-url %q must use https (plain http is allowed only for loopback development)", raw)
	}
	return u.Scheme + "://" + strings.ToLower(u.Host) + strings.TrimRight(u.EscapedPath(), "/"), nil
}

// ValidCookieNamespace reports whether ns may suffix the session cookie name.
func ValidCookieNamespace(ns string) bool {
	if len(ns) > 32 {
		return false
	}
	for _, c := range ns {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Handler is the API as an http.Handler.
func (s *Server) Handler() http.Handler { return s.router }

// Serve answers on ln until ctx ends, then stops accepting and gives active requests up to
// ShutdownTimeout to finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.router,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	<-errc
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
