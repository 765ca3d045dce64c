package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
)

// DefaultOIDCIssuer is the issuer used when --oidc-issuer is not set: ClickClack's first-party
// provider, kept so a ClickClack deployment's OIDC credentials work unchanged. Only this issuer may
// fall back to fixed endpoints when discovery is unavailable.
const DefaultOIDCIssuer = "https://id.openclaw.ai/api/auth"

// MaxDiscoveryDocument bounds the discovery document (§Limits).
const MaxDiscoveryDocument = 64 << 10

// OIDCScope is the scope every OIDC authorization requests.
const OIDCScope = "openid profile email"

// OIDCConfig configures OIDC sign-in.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL: https, or http on a loopback host for development; no
	// query, fragment or credentials. Default DefaultOIDCIssuer.
	Issuer string
	// ClientID and ClientSecret are the client's credentials. Required.
	ClientID     string
	ClientSecret string
	// FallbackIssuer is the one issuer whose failed discovery (network error, 404 or 501) falls
	// back to <issuer>/oauth2/authorize and <issuer>/oauth2/token; tests name their fake.
	// Default DefaultOIDCIssuer.
	FallbackIssuer string
	// Policy decides which addresses discovery and the token exchange may reach. Default
	// outbound.PublicOnly, plus loopback addresses when the issuer is a loopback URL.
	Policy outbound.Policy
	// Timeout bounds discovery and each token exchange. Default DefaultTimeout (30s).
	Timeout time.Duration
}

// OIDC is a discovered OpenID Connect provider.
type OIDC struct {
	issuer, clientID, clientSecret string
	authorizeURL, tokenURL         string
	fellBack                       bool
	client                         *http.Client
	oauth                          oauth2.Config
	// keys verifies id_token signatures against the provider's published keys (jwks_uri); nil
	// when the provider publishes none (the fallback issuer), see verify.
	keys  oidc.KeySet
	algos []string
}

// CheckIssuer validates an issuer URL: absolute, https (http only on a loopback host), no
// query, fragment or credentials.
func CheckIssuer(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("%q must be an absolute https URL", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return fmt.Errorf("%q must carry no credentials, query or fragment", raw)
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		return fmt.Errorf("%q must use https (plain http is allowed only for loopback development)", raw)
	}
	return nil
}

// DiscoverOIDC reads <issuer>/.well-known/openid-configuration (§OIDC sign-in rule 2): no
// redirects, at most MaxDiscoveryDocument bytes, within the timeout; the document's issuer must
// be the configured one and its authorization and token endpoints https (http only on loopback
// hosts). Only the fallback issuer, and only when discovery fails by network error, 404 or 501,
// uses <issuer>/oauth2/authorize and <issuer>/oauth2/token instead; malformed documents and
// redirects always fail.
func DiscoverOIDC(ctx context.Context, cfg OIDCConfig) (*OIDC, error) {
	if cfg.Issuer == "" {
		cfg.Issuer = DefaultOIDCIssuer
	}
	if cfg.FallbackIssuer == "" {
		cfg.FallbackIssuer = DefaultOIDCIssuer
	}
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, errors.New("--oidc-client-id and --oidc-client-secret must be set together")
	}
	if err := CheckIssuer(cfg.Issuer); err != nil {
		return nil, fmt.Errorf("--oidc-issuer %w", err)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	policy := cfg.Policy
	if policy == nil {
		policy = outbound.PublicOnly
		if u, _ := url.Parse(cfg.Issuer); loopbackHost(u.Hostname()) {
			policy = outbound.PublicOrLoopback
		}
	}
	o := &OIDC{issuer: cfg.Issuer, clientID: cfg.ClientID, clientSecret: cfg.ClientSecret, client: newClient(policy, cfg.Timeout)}
	base := strings.TrimRight(cfg.Issuer, "/")
	doc, err := o.discover(ctx, base+"/.well-known/openid-configuration", cfg.Timeout)
	var unavailable *discoveryUnavailable
	switch {
	case err == nil:
		o.authorizeURL, o.tokenURL = doc.AuthURL, doc.TokenURL
		if doc.JWKSURL != "" {
			if err := checkEndpoint(doc.JWKSURL); err != nil {
				return nil, fmt.Errorf("--oidc-issuer %s: jwks_uri: %w", cfg.Issuer, err)
			}
			// The keys are fetched (and refetched for an unknown key id) through the sign-in client.
			o.keys = oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), o.client), doc.JWKSURL)
			o.algos = doc.Algorithms
		}
	case errors.As(err, &unavailable) && cfg.Issuer == cfg.FallbackIssuer:
		o.authorizeURL, o.tokenURL, o.fellBack = base+"/oauth2/authorize", base+"/oauth2/token", true
	default:
		return nil, fmt.Errorf("--oidc-issuer %s: discovery failed: %w", cfg.Issuer, err)
	}
	for _, e := range []string{o.authorizeURL, o.tokenURL} {
		if err := checkEndpoint(e); err != nil {
			return nil, fmt.Errorf("--oidc-issuer %s: %w", cfg.Issuer, err)
		}
	}
	// client_secret_basic: the credentials go in the Authorization header, not the form.
	o.oauth = oauth2.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, Scopes: strings.Fields(OIDCScope),
		Endpoint: oauth2.Endpoint{AuthURL: o.authorizeURL, TokenURL: o.tokenURL, AuthStyle: oauth2.AuthStyleInHeader}}
	return o, nil
}

// discoveryUnavailable is a discovery failure that allows the fallback: a network error, 404 or 501.
type discoveryUnavailable struct{ cause error }

func (e *discoveryUnavailable) Error() string { return e.cause.Error() }
func (e *discoveryUnavailable) Unwrap() error { return e.cause }

// discoveryDocument is the provider metadata go-oidc reads (issuer, authorization_endpoint,
// token_endpoint, jwks_uri, id_token_signing_alg_values_supported).
type discoveryDocument = oidc.ProviderConfig

func (o *OIDC) discover(ctx context.Context, docURL string, timeout time.Duration) (discoveryDocument, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var doc discoveryDocument
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, docURL, nil)
	if err != nil {
		return doc, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := o.client.Do(req)
	if err != nil {
		if errors.Is(err, outbound.ErrRefused) {
			return doc, err
		}
		return doc, &discoveryUnavailable{err}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusNotImplemented:
		return doc, &discoveryUnavailable{fmt.Errorf("%s answered %d", docURL, resp.StatusCode)}
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return doc, fmt.Errorf("%s redirected (%d); redirects are not followed", docURL, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return doc, fmt.Errorf("%s answered %d", docURL, resp.StatusCode)
	}
	body, err := readLimited(resp.Body, MaxDiscoveryDocument)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return doc, fmt.Errorf("the discovery document is larger than %d bytes", MaxDiscoveryDocument)
		}
		return doc, &discoveryUnavailable{err}
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return doc, fmt.Errorf("the discovery document is not a JSON object: %w", err)
	}
	switch {
	case doc.IssuerURL != o.issuer:
		return doc, fmt.Errorf("the discovery document names the issuer %q, not %q", doc.IssuerURL, o.issuer)
	case doc.AuthURL == "" || doc.TokenURL == "":
		return doc, errors.New("the discovery document lacks authorization_endpoint or token_endpoint")
	}
	return doc, nil
}

// checkEndpoint requires an absolute https URL, or http on a loopback host (development).
func checkEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("endpoint %q must be an absolute URL without credentials or fragment", raw)
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname())) {
		return fmt.Errorf("endpoint %q must use https (plain http only on loopback hosts)", raw)
	}
	return nil
}

func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Endpoints returns the authorization and token endpoints in use, and whether they are the
// fallback ones.
func (o *OIDC) Endpoints() (authorize, token string, fellBack bool) {
	return o.authorizeURL, o.tokenURL, o.fellBack
}

// AuthorizeURL is where the browser goes to sign in: the authorization endpoint with the code
// flow, scope OIDCScope, the state, the exact redirect URI and the S256 challenge.
func (o *OIDC) AuthorizeURL(state, challenge, redirectURI string) string {
	return authCodeURL(o.oauth, state, challenge, redirectURI)
}

// OIDCAccount is who an OIDC sign-in proved to be.
type OIDCAccount struct {
	Email string // verified
	Name  string
}

// SignIn exchanges the code at the token endpoint (client_secret_basic plus the PKCE verifier
// and the exact redirect URI) and checks the returned id_token's claims: issuer, audience,
// expiry at now, and a verified email. The token comes straight from the issuer over the
// authenticated exchange, so its signature is not checked locally (§OIDC sign-in rule 4).
// Codes: provider_failed (the exchange failed, or the id_token is malformed, for another issuer
// or audience, or expired), forbidden (no verified email).
func (o *OIDC) SignIn(ctx context.Context, code, verifier, redirectURI string, now time.Time) (OIDCAccount, error) {
	token, err := exchange(ctx, o.client, o.oauth, code, verifier, redirectURI, "the identity provider")
	if err != nil {
		return OIDCAccount{}, err
	}
	idToken, _ := token.Extra("id_token").(string)
	return o.verify(ctx, idToken, now)
}

// idClaims are the id_token claims sign-in reads beyond those go-oidc checks.
type idClaims struct {
	Email             string          `json:"email"`
	EmailVerified     json.RawMessage `json:"email_verified"`
	Name              string          `json:"name"`
	PreferredUsername string          `json:"preferred_username"`
}

// verify checks an id_token with go-oidc: its issuer, its audience (the client id, in a string
// or a list), its expiry at now, and its signature against the provider's published keys. A
// provider that publishes no keys (the fallback issuer, which has no discovery document) is
// trusted on the token alone: it came straight from the issuer over the authenticated TLS
// exchange. The person must have a verified email.
// Codes: provider_failed (malformed, unsigned or badly signed, another issuer or audience,
// expired), forbidden (no verified email).
func (o *OIDC) verify(ctx context.Context, raw string, now time.Time) (OIDCAccount, error) {
	verifier := oidc.NewVerifier(o.issuer, o.keys, &oidc.Config{ClientID: o.clientID, SupportedSigningAlgs: o.algos,
		Now: func() time.Time { return now }, InsecureSkipSignatureCheck: o.keys == nil})
	token, err := verifier.Verify(oidc.ClientContext(ctx, o.client), raw)
	var expired *oidc.TokenExpiredError
	switch {
	// go-oidc accepts a token expiring at this very second; exp must be after the clock.
	case errors.As(err, &expired) || (err == nil && !token.Expiry.After(now)):
		return OIDCAccount{}, &persist.Error{Code: persist.CodeProviderFailed,
			Message: "the id_token has expired; sign in again", Err: err}
	case err != nil:
		return OIDCAccount{}, &persist.Error{Code: persist.CodeProviderFailed,
			Message: "the identity provider sent an id_token that failed verification", Err: err}
	}
	var c idClaims
	if err := token.Claims(&c); err != nil {
		return OIDCAccount{}, &persist.Error{Code: persist.CodeProviderFailed,
			Message: "the identity provider sent an id_token that could not be read", Err: err}
	}
	email := strings.TrimSpace(c.Email)
	if email == "" || !isTrue(c.EmailVerified) {
		return OIDCAccount{}, persist.Forbidden("your account at the identity provider has no verified email address")
	}
	name := c.Name
	if strings.TrimSpace(name) == "" {
		name = c.PreferredUsername
	}
	return OIDCAccount{Email: email, Name: name}, nil
}

// isTrue reads email_verified as the boolean true or, as some providers send it, the string "true".
func isTrue(raw json.RawMessage) bool {
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == "true"
}
