// Package accessproxytest stands in for a Cloudflare Access team in tests: an HTTPS server
// publishing a key set at the certs path, and a signer of assertions with those keys. Only
// _test.go files import it.
package accessproxytest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/natterchat/natter/server/accessproxy"
)

// Defaults of a test team.
const (
	TeamDomain = "https://natter-test.cloudflareaccess.com"
	Audience   = "natter-test-audience-tag"
)

// Team is a stand-in Access team.
type Team struct {
	Server *httptest.Server

	fetches atomic.Int64

	mu        sync.Mutex
	keys      map[string]*rsa.PrivateKey // every key that can sign
	published []string                   // the key ids the certs endpoint lists
	handler   http.HandlerFunc           // replaces the certs endpoint when set
}

// keyPool holds RSA keys shared by every test in the binary: generating 2048-bit keys is slow.
var keyPool = sync.OnceValue(func() []*rsa.PrivateKey {
	keys := make([]*rsa.PrivateKey, 3)
	for i := range keys {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		keys[i] = k
	}
	return keys
})

// New starts a team with three signing keys, "k1", "k2" and "k3", of which only k1 is published.
func New(t testing.TB) *Team {
	t.Helper()
	pool := keyPool()
	team := &Team{keys: map[string]*rsa.PrivateKey{"k1": pool[0], "k2": pool[1], "k3": pool[2]}, published: []string{"k1"}}
	team.Server = httptest.NewTLSServer(http.HandlerFunc(team.serve))
	t.Cleanup(team.Server.Close)
	return team
}

func (team *Team) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != accessproxy.CertsPath {
		http.NotFound(w, r)
		return
	}
	team.fetches.Add(1)
	team.mu.Lock()
	h := team.handler
	type jwk struct {
		Kty string `json:"kty"`
		Kid string `json:"kid"`
		Alg string `json:"alg"`
		Use string `json:"use"`
		N   string `json:"n"`
		E   string `json:"e"`
	}
	var set struct {
		Keys []jwk `json:"keys"`
	}
	for _, kid := range team.published {
		pub := team.keys[kid].PublicKey
		set.Keys = append(set.Keys, jwk{Kty: "RSA", Kid: kid, Alg: "RS256", Use: "sig",
			N: base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
			E: base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes())})
	}
	team.mu.Unlock()
	if h != nil {
		h(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(set)
}

// Publish replaces the key ids the certs endpoint lists.
func (team *Team) Publish(kids ...string) {
	team.mu.Lock()
	defer team.mu.Unlock()
	team.published = kids
}

// Handle replaces the certs endpoint (nil restores it); fetches are still counted.
func (team *Team) Handle(h http.HandlerFunc) {
	team.mu.Lock()
	defer team.mu.Unlock()
	team.handler = h
}

// Fetches is how many times the certs endpoint was asked for the key set.
func (team *Team) Fetches() int64 { return team.fetches.Load() }

// Config is a verifier configuration for this team: keys from the test server, whose
// certificate it trusts, on the loopback address the strict default policy would refuse.
func (team *Team) Config(now func() time.Time) accessproxy.Config {
	pool := x509.NewCertPool()
	pool.AddCert(team.Server.Certificate())
	return accessproxy.Config{TeamDomain: TeamDomain, Audience: Audience, KeysBase: team.Server.URL, Now: now,
		RootCAs: pool, AllowAddress: func(netip.Addr) bool { return true }}
}

// Claims are valid claims for email at now: issuer, audience, issued now, expiring in an hour.
func Claims(email string, now time.Time) jwt.MapClaims {
	c := jwt.MapClaims{"iss": TeamDomain, "aud": []string{Audience}, "sub": "sub-" + email, "iat": now.Unix(),
		"nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(), "type": "app"}
	if email != "" {
		c["email"] = email
	}
	return c
}

// Key returns the private key kid, for tests that sign assertions some other way.
func (team *Team) Key(kid string) *rsa.PrivateKey {
	team.mu.Lock()
	defer team.mu.Unlock()
	return team.keys[kid]
}

// Sign signs claims with the team's key kid (published or not) as an RS256 assertion.
func (team *Team) Sign(t testing.TB, kid string, claims jwt.MapClaims) string {
	t.Helper()
	team.mu.Lock()
	key := team.keys[kid]
	team.mu.Unlock()
	if key == nil {
		t.Fatalf("no test key %q", kid)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign assertion: %v", err)
	}
	return s
}

// Assertion is a valid assertion for email at now, signed with k1.
func (team *Team) Assertion(t testing.TB, email string, now time.Time) string {
	t.Helper()
	return team.Sign(t, "k1", Claims(email, now))
}
