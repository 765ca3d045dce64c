package outbound

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"time"
)

// ClientConfig configures an outbound HTTP client or transport.
type ClientConfig struct {
	// Policy admits the addresses a call may connect to. Default PublicOnly.
	Policy Policy
	// Resolver resolves host names. Default net.DefaultResolver.
	Resolver Resolver
	// Timeout bounds each connection attempt, the TLS handshake and the wait for a response's
	// header; a client from NewClient is bounded by it as a whole too. Default 30s.
	Timeout time.Duration
	// RootCAs replaces the system's certificate roots (tests). Default nil: the system's.
	RootCAs *x509.CertPool
	// IdleConnsPerHost is how many connections to one host are kept open between calls, kept
	// for 90s. Default 0: none, so every call resolves and checks its destination afresh.
	IdleConnsPerHost int
	// HTTP2 lets a TLS connection negotiate HTTP/2. Default false: HTTP/1.1.
	HTTP2 bool
}

// DefaultTimeout is ClientConfig.Timeout's default.
const DefaultTimeout = 30 * time.Second

// maxResponseHeaderBytes bounds the header of every answer: no destination needs more, and a
// hostile one must not make Natter hold a megabyte (net/http's default) per call.
const maxResponseHeaderBytes = 64 << 10

// NewTransport is the transport under every outbound call Natter makes: connections only to
// addresses the policy admits (through Dialer: a host name is resolved once, refused whole when
// any answer is refused, and the checked address is the one dialled), never through a proxy
// named by the environment (it would dial on Natter's behalf, past the policy), TLS 1.2 at
// least, and every wait bounded. Callers that need an *http.Client use NewClient; a library that
// takes a transport (the S3 client) takes this one.
func NewTransport(cfg ClientConfig) *http.Transport {
	cfg = cfg.withDefaults()
	dialer := &Dialer{Policy: cfg.Policy, Resolver: cfg.Resolver, Timeout: cfg.Timeout}
	t := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      cfg.HTTP2,
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		DisableKeepAlives:      cfg.IdleConnsPerHost <= 0,
	}
	if cfg.IdleConnsPerHost > 0 {
		t.MaxIdleConnsPerHost = cfg.IdleConnsPerHost
		t.IdleConnTimeout = 90 * time.Second
	}
	return t
}

// NewClient is the one constructor of Natter's outbound HTTP clients (callbacks, sign-in
// providers, the identity proxy's keys, Web Push): NewTransport's transport, the whole exchange
// bounded by Timeout, and no redirect followed — a 3xx comes back as the answer, and its target,
// which the policy never saw, is never called.
func NewClient(cfg ClientConfig) *http.Client {
	cfg = cfg.withDefaults()
	return &http.Client{
		Transport:     NewTransport(cfg),
		Timeout:       cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (cfg ClientConfig) withDefaults() ClientConfig {
	if cfg.Policy == nil {
		cfg.Policy = PublicOnly
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	return cfg
}
