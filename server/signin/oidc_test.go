package signin

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
)

// discoveryServer answers the discovery path with handler; its issuer is its own URL.
func discoveryServer(t *testing.T, handler func(w http.ResponseWriter, issuer string)) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/openid-configuration" {
			http.NotFound(w, r)
			return
		}
		handler(w, srv.URL)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func document(issuer, authorize, token string) func(http.ResponseWriter, string) {
	return func(w http.ResponseWriter, _ string) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "authorization_endpoint": authorize, "token_endpoint": token})
	}
}

func status(code int) func(http.ResponseWriter, string) {
	return func(w http.ResponseWriter, _ string) { w.WriteHeader(code) }
}

// paddedDocument is a usable discovery document of exactly size bytes.
func paddedDocument(issuer string, size int) string {
	body, _ := json.Marshal(map[string]string{"issuer": issuer, "authorization_endpoint": issuer + "/a", "token_endpoint": issuer + "/t"})
	padded := string(body[:len(body)-1]) + `, "pad": "`
	return padded + strings.Repeat("x", size-len(padded)-2) + `"}`
}

func oidcConfig(issuer string, fallback bool) OIDCConfig {
	cfg := OIDCConfig{Issuer: issuer, ClientID: "client", ClientSecret: "secret",
		Policy: func(a netip.Addr) bool { return a.Unmap().IsLoopback() }, FallbackIssuer: "https://fallback.invalid"}
	if fallback {
		cfg.FallbackIssuer = issuer
	}
	return cfg
}

func TestDiscoverOIDC(t *testing.T) {
	t.Parallel()

	t.Run("UsesTheDocumentsEndpoints", func(t *testing.T) {
		t.Parallel()
		var srv *httptest.Server
		srv = discoveryServer(t, func(w http.ResponseWriter, issuer string) {
			document(issuer, issuer+"/authz", srv.URL+"/tok")(w, issuer)
		})
		o, err := DiscoverOIDC(t.Context(), oidcConfig(srv.URL, true))
		require.NoError(t, err)
		authorize, token, fellBack := o.Endpoints()
		require.Equal(t, srv.URL+"/authz", authorize)
		require.Equal(t, srv.URL+"/tok", token)
		require.False(t, fellBack)
	})

	t.Run("IssuerMustMatch", func(t *testing.T) {
		t.Parallel()
		srv := discoveryServer(t, func(w http.ResponseWriter, issuer string) {
			document(issuer+"/other", issuer+"/authz", issuer+"/tok")(w, issuer)
		})
		_, err := DiscoverOIDC(t.Context(), oidcConfig(srv.URL, true))
		require.ErrorContains(t, err, "names the issuer")
	})

	t.Run("FallbackIssuerFallsBackOn404And501", func(t *testing.T) {
		t.Parallel()
		for _, code := range []int{http.StatusNotFound, http.StatusNotImplemented} {
			srv := discoveryServer(t, status(code))
			o, err := DiscoverOIDC(t.Context(), oidcConfig(srv.URL, true))
			require.NoError(t, err, "status %d", code)
			authorize, token, fellBack := o.Endpoints()
			require.Equal(t, srv.URL+"/oauth2/authorize", authorize)
			require.Equal(t, srv.URL+"/oauth2/token", token)
			require.True(t, fellBack)
		}
	})

	t.Run("FallbackIssuerFallsBackOnNetworkError", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		issuer := srv.URL
		srv.Close() // nothing listens there any more
		o, err := DiscoverOIDC(t.Context(), oidcConfig(issuer, true))
		require.NoError(t, err)
		_, _, fellBack := o.Endpoints()
		require.True(t, fellBack)
	})

	t.Run("OtherIssuersNeedAUsableDocument", func(t *testing.T) {
		t.Parallel()
		for _, code := range []int{http.StatusNotFound, http.StatusNotImplemented} {
			srv := discoveryServer(t, status(code))
			_, err := DiscoverOIDC(t.Context(), oidcConfig(srv.URL, false))
			require.ErrorContains(t, err, "discovery failed", "status %d", code)
		}
		srv := httptest.NewServer(http.NotFoundHandler())
		issuer := srv.URL
		srv.Close()
		_, err := DiscoverOIDC(t.Context(), oidcConfig(issuer, false))
		require.ErrorContains(t, err, "discovery failed")
	})

	t.Run("FallbackIssuerStillFailsOnOtherAnswers", func(t *testing.T) {
		t.Parallel()
		var redirected atomic.Int32
		target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { redirected.Add(1) }))
		t.Cleanup(target.Close)
		cases := map[string]func(http.ResponseWriter, string){
			"ServerError": status(http.StatusInternalServerError),
			"Forbidden":   status(http.StatusForbidden),
			"Malformed":   func(w http.ResponseWriter, _ string) { _, _ = w.Write([]byte(`{"issuer": `)) },
			"NotAnObject": func(w http.ResponseWriter, _ string) { _, _ = w.Write([]byte(`[1, 2]`)) },
			"NoEndpoints": func(w http.ResponseWriter, issuer string) { document(issuer, "", "")(w, issuer) },
			"Redirect": func(w http.ResponseWriter, _ string) {
				w.Header().Set("Location", target.URL+"/.well-known/openid-configuration")
				w.WriteHeader(http.StatusFound)
			},
			"TooLarge": func(w http.ResponseWriter, issuer string) { // a usable document, one byte over the limit
				_, _ = w.Write([]byte(paddedDocument(issuer, MaxDiscoveryDocument+1)))
			},
			"PlainHTTPEndpoint": func(w http.ResponseWriter, issuer string) {
				document(issuer, "http://idp.example.com/authorize", issuer+"/token")(w, issuer)
			},
		}
		for name, handler := range cases {
			srv := discoveryServer(t, handler)
			_, err := DiscoverOIDC(t.Context(), oidcConfig(srv.URL, true))
			require.Error(t, err, name)
		}
		require.Zero(t, redirected.Load(), "redirects are not followed")
	})

	t.Run("DocumentUpTo64KiB", func(t *testing.T) {
		t.Parallel()
		srv := discoveryServer(t, func(w http.ResponseWriter, issuer string) {
			_, _ = w.Write([]byte(paddedDocument(issuer, MaxDiscoveryDocument)))
		})
		_, err := DiscoverOIDC(t.Context(), oidcConfig(srv.URL, false))
		require.NoError(t, err)
	})

	t.Run("TimesOut", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
		t.Cleanup(srv.Close)
		cfg := oidcConfig(srv.URL, false)
		cfg.Timeout = 50 * time.Millisecond
		_, err := DiscoverOIDC(t.Context(), cfg)
		require.ErrorContains(t, err, "discovery failed")
	})

	t.Run("DefaultPolicyRefusesPrivateIssuersWithoutFallback", func(t *testing.T) {
		t.Parallel()
		srv := discoveryServer(t, status(http.StatusNotFound))
		cfg := oidcConfig(srv.URL, true)
		cfg.Policy = outbound.PublicOnly
		_, err := DiscoverOIDC(t.Context(), cfg)
		require.ErrorIs(t, err, outbound.ErrRefused)
	})

	t.Run("ConfigurationChecked", func(t *testing.T) {
		t.Parallel()
		_, err := DiscoverOIDC(t.Context(), OIDCConfig{Issuer: "https://idp.example.com", ClientID: "only-id"})
		require.ErrorContains(t, err, "together")
		for _, issuer := range []string{"http://idp.example.com", "https://idp.example.com?x=1", "https://u:p@idp.example.com",
			"https://idp.example.com#f", "idp.example.com", "ftp://idp.example.com"} {
			require.Error(t, CheckIssuer(issuer), issuer)
		}
		for _, issuer := range []string{"https://idp.example.com", "https://idp.example.com/realms/x", "http://127.0.0.1:8080", "http://localhost/x"} {
			require.NoError(t, CheckIssuer(issuer), issuer)
		}
		require.Equal(t, "https://id.openclaw.ai/api/auth", DefaultOIDCIssuer)
	})
}

// unsignedToken is a compact JWS of claims with a signature nobody checks: what the fallback
// issuer, which publishes no keys, is trusted with.
func unsignedToken(claims map[string]any) string {
	payload, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"RS256","kid":"none"}`)) + "." + enc.EncodeToString(payload) + "." +
		enc.EncodeToString([]byte("not-a-signature"))
}

func TestIDTokenClaims(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	o := &OIDC{issuer: "https://idp.example.com", clientID: "client", client: newClient(outbound.PublicOnly, time.Second)}
	valid := func() map[string]any {
		return map[string]any{"iss": o.issuer, "aud": "client", "exp": now.Add(time.Minute).Unix(), "email": "A@Example.com",
			"email_verified": true, "preferred_username": "ann"}
	}
	account, err := o.verify(t.Context(), unsignedToken(valid()), now)
	require.NoError(t, err)
	require.Equal(t, OIDCAccount{Email: "A@Example.com", Name: "ann"}, account)
	listed := valid()
	listed["aud"] = []string{"other", "client"}
	listed["email_verified"] = "true"
	_, err = o.verify(t.Context(), unsignedToken(listed), now)
	require.NoError(t, err, "aud may be a list; email_verified may be the string \"true\"")

	for name, tc := range map[string]struct {
		edit func(map[string]any)
		code persist.Code
	}{
		"Issuer":          {func(c map[string]any) { c["iss"] = "https://idp.example.com/" }, persist.CodeProviderFailed},
		"Audience":        {func(c map[string]any) { c["aud"] = "other" }, persist.CodeProviderFailed},
		"AudienceMissing": {func(c map[string]any) { delete(c, "aud") }, persist.CodeProviderFailed},
		"Expired":         {func(c map[string]any) { c["exp"] = now.Add(-time.Second).Unix() }, persist.CodeProviderFailed},
		"NoExpiry":        {func(c map[string]any) { delete(c, "exp") }, persist.CodeProviderFailed},
		"Unverified":      {func(c map[string]any) { c["email_verified"] = false }, persist.CodeForbidden},
		"NoVerification":  {func(c map[string]any) { delete(c, "email_verified") }, persist.CodeForbidden},
		"NoEmail":         {func(c map[string]any) { c["email"] = " " }, persist.CodeForbidden},
	} {
		c := valid()
		tc.edit(c)
		_, err := o.verify(t.Context(), unsignedToken(c), now)
		e, ok := persist.ErrorOf(err)
		require.True(t, ok, name)
		require.Equal(t, tc.code, e.Code, name)
	}
	for _, raw := range []string{"a.b", "a.!!!.c", ""} {
		_, err := o.verify(t.Context(), raw, now)
		e, ok := persist.ErrorOf(err)
		require.True(t, ok, raw)
		require.Equal(t, persist.CodeProviderFailed, e.Code, raw)
	}
}

// TestIDTokenSignatures: a provider that publishes keys (jwks_uri) has its id_tokens' signatures
// checked; a token signed by another key, or tampered with, is refused.
func TestIDTokenSignatures(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		issuer := srv.URL
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": issuer, "authorization_endpoint": issuer + "/authorize",
				"token_endpoint": issuer + "/token", "jwks_uri": issuer + "/jwks", "id_token_signing_alg_values_supported": []string{"RS256"}})
		case "/jwks":
			enc := base64.RawURLEncoding
			_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": "k1", "alg": "RS256",
				"use": "sig", "n": enc.EncodeToString(key.N.Bytes()), "e": enc.EncodeToString(big.NewInt(int64(key.E)).Bytes())}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	o, err := DiscoverOIDC(t.Context(), oidcConfig(srv.URL, false))
	require.NoError(t, err)

	now := time.Now()
	claims := jwt.MapClaims{"iss": srv.URL, "aud": "client", "exp": now.Add(time.Minute).Unix(), "email": "sig@example.com",
		"email_verified": true}
	sign := func(k *rsa.PrivateKey) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
		tok.Header["kid"] = "k1"
		raw, err := tok.SignedString(k)
		require.NoError(t, err)
		return raw
	}
	account, err := o.verify(t.Context(), sign(key), now)
	require.NoError(t, err)
	require.Equal(t, "sig@example.com", account.Email)

	good := sign(key)
	parts := strings.Split(good, ".")
	forged := map[string]any{"iss": srv.URL, "aud": "client", "exp": now.Add(time.Minute).Unix(), "email": "boss@example.com",
		"email_verified": true}
	payload, _ := json.Marshal(forged)
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
	for name, raw := range map[string]string{"OtherKey": sign(other), "Tampered": tampered, "Unsigned": unsignedToken(forged)} {
		_, err := o.verify(t.Context(), raw, now)
		e, ok := persist.ErrorOf(err)
		require.True(t, ok, name)
		require.Equal(t, persist.CodeProviderFailed, e.Code, name)
	}
}
