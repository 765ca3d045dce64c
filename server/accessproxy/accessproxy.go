// Package accessproxy verifies the identity assertions a trusted identity proxy (Cloudflare
// Access) puts on every request it lets through: RS256 JWTs signed by keys published at
// <team-domain>/cdn-cgi/access/certs. It fetches and caches that key set itself, through a
// client that uses no proxy, follows no redirects, reaches only public addresses by default and
// bounds the time and size of each fetch. It imports only outbound.
package accessproxy

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/natterchat/natter/outbound"
)

// Header is the request header that carries the assertion, as Cloudflare Access names it.
const Header = "Cf-Access-Jwt-Assertion"

// CertsPath is where the team domain publishes its signing keys.
const CertsPath = "/cdn-cgi/access/certs"

// maxAssertionBytes bounds the assertion itself; Access assertions are about 1 KiB.
const maxAssertionBytes = 16 << 10

// minRSABits is the smallest signing key accepted.
const minRSABits = 2048

// Config configures a Verifier.
type Config struct {
	// TeamDomain is the Access team's HTTPS origin, such as https://example.cloudflareaccess.com.
	// An assertion's issuer must equal it exactly. Required.
	TeamDomain string
	// Audience is the Access application's audience tag; an assertion's aud must include it.
	// Required.
	Audience string
	// KeysBase is the origin the key set is fetched from, at KeysBase + CertsPath. Default
	// TeamDomain; tests point it at a local server.
	KeysBase string
	// KeySetTTL bounds how long a fetched key set is used before it is fetched again. Default 1h.
	KeySetTTL time.Duration
	// RefreshInterval is the least time between two fetches: an assertion naming an unknown key
	// id refreshes the set at most this often. Default 30s.
	RefreshInterval time.Duration
	// FetchTimeout bounds one fetch of the key set, connection included. Default 10s.
	FetchTimeout time.Duration
	// MaxKeySetBytes bounds the key-set document. Default 256 KiB.
	MaxKeySetBytes int64
	// Leeway is the clock skew tolerated on exp, iat and nbf. Default 30s.
	Leeway time.Duration
	// Now is the clock assertions are checked against. Default time.Now.
	Now func() time.Time
	// RootCAs verifies the key server's certificate. Default nil (the system roots).
	RootCAs *x509.CertPool
	// AllowAddress decides which addresses the key fetch may connect to. Default
	// outbound.PublicOnly, Natter's one outbound address policy.
	AllowAddress func(netip.Addr) bool
}

// Identity is what a valid assertion says about the person.
type Identity struct {
	// Email is the address from the email claim, as asserted.
	Email string
	// Subject is the sub claim, Access's id for the person.
	Subject string
}

// Verifier checks assertions against one team domain and audience. It is safe for concurrent
// use and runs no goroutine: fetches happen in the request that needs them.
type Verifier struct {
	cfg     Config
	keysURL string
	client  *http.Client
	parser  *jwt.Parser

	fetchMu sync.Mutex // held for a whole fetch, so concurrent requests share one

	mu        sync.Mutex // guards the fields below
	keys      map[string]*rsa.PublicKey
	expires   time.Time // the key set is not used from this instant on
	lastFetch time.Time // the last fetch attempt, successful or not
}

// ParseTeamDomain checks a team domain and returns it as an origin: https, a host, and nothing
// else (no path, credentials, query or fragment).
func ParseTeamDomain(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		u.ForceQuery || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("%q must be an https origin such as https://example.cloudflareaccess.com, with no path, credentials or query", raw)
	}
	return "https://" + strings.ToLower(u.Host), nil
}

// New validates cfg, applies defaults and returns a Verifier.
func New(cfg Config) (*Verifier, error) {
	if cfg.TeamDomain == "" || strings.TrimSpace(cfg.Audience) == "" {
		return nil, errors.New("accessproxy: TeamDomain and Audience must be set together")
	}
	team, err := ParseTeamDomain(cfg.TeamDomain)
	if err != nil {
		return nil, fmt.Errorf("accessproxy: TeamDomain %w", err)
	}
	cfg.TeamDomain = team
	if cfg.KeysBase == "" {
		cfg.KeysBase = team
	}
	cfg.KeysBase = strings.TrimRight(cfg.KeysBase, "/")
	if u, err := url.Parse(cfg.KeysBase); err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("accessproxy: KeysBase %q must be an https origin", cfg.KeysBase)
	}
	if cfg.KeySetTTL == 0 {
		cfg.KeySetTTL = time.Hour
	}
	if cfg.RefreshInterval == 0 {
		cfg.RefreshInterval = 30 * time.Second
	}
	if cfg.FetchTimeout == 0 {
		cfg.FetchTimeout = 10 * time.Second
	}
	if cfg.MaxKeySetBytes == 0 {
		cfg.MaxKeySetBytes = 256 << 10
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AllowAddress == nil {
		cfg.AllowAddress = outbound.PublicOnly
	}
	if cfg.KeySetTTL < 0 || cfg.RefreshInterval < 0 || cfg.FetchTimeout < 0 || cfg.MaxKeySetBytes < 0 || cfg.Leeway < 0 {
		return nil, errors.New("accessproxy: durations and sizes must not be negative")
	}
	v := &Verifier{cfg: cfg, keysURL: cfg.KeysBase + CertsPath, client: keyClient(cfg)}
	v.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{"RS256"}),
		jwt.WithIssuer(team),
		jwt.WithAudience(cfg.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Now),
	)
	return v, nil
}

// keyClient is the only client that fetches keys: outbound's, keeping its one connection to
// the team's domain between fetches.
func keyClient(cfg Config) *http.Client {
	return outbound.NewClient(outbound.ClientConfig{Policy: cfg.AllowAddress, Timeout: cfg.FetchTimeout, RootCAs: cfg.RootCAs,
		IdleConnsPerHost: 1, HTTP2: true})
}

// claims are the parts of an Access assertion Natter reads.
type claims struct {
	jwt.RegisteredClaims
	Email string `json:"email"`
}

// Verify checks an assertion: an RS256 signature by a key of the team's set, the exact issuer,
// the audience, a valid expiry and issue time, and an email claim (service-token assertions,
// which carry none, are refused). The error says why, for logs; it never quotes the assertion.
func (v *Verifier) Verify(ctx context.Context, assertion string) (Identity, error) {
	if len(assertion) > maxAssertionBytes {
		return Identity{}, errors.New("the assertion is too large")
	}
	var c claims
	_, err := v.parser.ParseWithClaims(assertion, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, errors.New("the assertion names no key id")
		}
		return v.key(ctx, kid)
	})
	if err != nil {
		return Identity{}, err
	}
	if c.IssuedAt == nil {
		return Identity{}, errors.New("the assertion has no issue time")
	}
	if strings.TrimSpace(c.Email) == "" {
		return Identity{}, errors.New("the assertion has no email claim (service tokens cannot sign in; use a bot token)")
	}
	return Identity{Email: c.Email, Subject: c.Subject}, nil
}

// key returns the public key with this id: from the cached set while it is fresh, otherwise
// after fetching the set again, at most once per RefreshInterval.
func (v *Verifier) key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	if k, ok := v.cached(kid); ok {
		return k, nil
	}
	v.fetchMu.Lock()
	defer v.fetchMu.Unlock()
	if k, ok := v.cached(kid); ok { // fetched while this request waited
		return k, nil
	}
	now := v.cfg.Now()
	v.mu.Lock()
	recent := !v.lastFetch.IsZero() && now.Sub(v.lastFetch) < v.cfg.RefreshInterval
	v.mu.Unlock()
	if recent {
		return nil, fmt.Errorf("unknown key id %q (the key set was fetched less than %s ago)", kid, v.cfg.RefreshInterval)
	}
	keys, err := v.fetch(ctx)
	v.mu.Lock()
	v.lastFetch = now
	if err == nil {
		v.keys, v.expires = keys, now.Add(v.cfg.KeySetTTL)
	}
	v.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("fetch the key set: %w", err)
	}
	if k, ok := keys[kid]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("unknown key id %q", kid)
}

// cached returns a key of the current set while the set is fresh.
func (v *Verifier) cached(kid string) (*rsa.PublicKey, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k, ok := v.keys[kid]
	return k, ok && v.cfg.Now().Before(v.expires)
}

// keySet is the JSON Web Key Set document; Access adds public_cert(s), which are not needed.
type keySet struct {
	Keys []struct {
		Kty string `json:"kty"`
		Kid string `json:"kid"`
		Alg string `json:"alg"`
		Use string `json:"use"`
		N   string `json:"n"`
		E   string `json:"e"`
	} `json:"keys"`
}

// fetch reads the key set once. Keys that are not RSA signing keys of at least 2048 bits are
// skipped; a set with none usable is an error.
func (v *Verifier) fetch(ctx context.Context) (map[string]*rsa.PublicKey, error) {
	ctx, cancel := context.WithTimeout(ctx, v.cfg.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.keysURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return nil, fmt.Errorf("the key server redirected (%d); redirects are not followed", resp.StatusCode)
		}
		return nil, fmt.Errorf("the key server answered %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, v.cfg.MaxKeySetBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > v.cfg.MaxKeySetBytes {
		return nil, fmt.Errorf("the key set is larger than %d bytes", v.cfg.MaxKeySetBytes)
	}
	var set keySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("the key set is not JSON: %w", err)
	}
	keys := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "RSA" || k.Kid == "" || (k.Alg != "" && k.Alg != "RS256") || (k.Use != "" && k.Use != "sig") {
			continue
		}
		n, errN := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.N, "="))
		e, errE := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.E, "="))
		if errN != nil || errE != nil || len(e) == 0 || len(e) > 4 {
			continue
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < minRSABits || pub.E < 3 || pub.E%2 == 0 {
			continue
		}
		keys[k.Kid] = pub
	}
	if len(keys) == 0 {
		return nil, errors.New("the key set holds no usable RS256 key")
	}
	return keys, nil
}
