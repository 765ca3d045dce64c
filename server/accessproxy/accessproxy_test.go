package accessproxy_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/server/accessproxy"
	"github.com/natterchat/natter/server/accessproxy/accessproxytest"
)

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type bundle struct {
	team  *accessproxytest.Team
	clock *clock
	v     *accessproxy.Verifier
}

func setup(t *testing.T, edit ...func(*accessproxy.Config)) bundle {
	t.Helper()
	team := accessproxytest.New(t)
	c := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	cfg := team.Config(c.Now)
	for _, e := range edit {
		e(&cfg)
	}
	v, err := accessproxy.New(cfg)
	require.NoError(t, err)
	return bundle{team: team, clock: c, v: v}
}

func TestVerifyClaims(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := b.clock.Now()
	id, err := b.v.Verify(t.Context(), b.team.Assertion(t, "Nia@Example.com", now))
	require.NoError(t, err)
	require.Equal(t, accessproxy.Identity{Email: "Nia@Example.com", Subject: "sub-Nia@Example.com"}, id)

	with := func(edit func(jwt.MapClaims)) jwt.MapClaims {
		c := accessproxytest.Claims("nia@example.com", now)
		edit(c)
		return c
	}
	for _, tc := range []struct {
		name   string
		claims jwt.MapClaims
		why    string // a part of the error; "" when the assertion is valid
	}{
		{"AudienceAsAString", with(func(c jwt.MapClaims) { c["aud"] = accessproxytest.Audience }), ""},
		{"AudienceAmongOthers", with(func(c jwt.MapClaims) { c["aud"] = []string{"other", accessproxytest.Audience} }), ""},
		{"SkewWithinLeeway", with(func(c jwt.MapClaims) { c["iat"] = now.Add(20 * time.Second).Unix() }), ""},
		{"OtherIssuer", with(func(c jwt.MapClaims) { c["iss"] = "https://other.cloudflareaccess.com" }), "invalid issuer"},
		{"IssuerWithSlash", with(func(c jwt.MapClaims) { c["iss"] = accessproxytest.TeamDomain + "/" }), "invalid issuer"},
		{"IssuerInOtherCase", with(func(c jwt.MapClaims) { c["iss"] = strings.ToUpper(accessproxytest.TeamDomain) }), "invalid issuer"},
		{"NoIssuer", with(func(c jwt.MapClaims) { delete(c, "iss") }), "iss claim is required"},
		{"OtherAudience", with(func(c jwt.MapClaims) { c["aud"] = []string{"someone-else"} }), "invalid audience"},
		{"NoAudience", with(func(c jwt.MapClaims) { delete(c, "aud") }), "aud claim is required"},
		{"Expired", with(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() }), "expired"},
		{"NoExpiry", with(func(c jwt.MapClaims) { delete(c, "exp") }), "exp claim is required"},
		{"IssuedInTheFuture", with(func(c jwt.MapClaims) { c["iat"] = now.Add(time.Hour).Unix() }), "before issued"},
		{"NoIssueTime", with(func(c jwt.MapClaims) { delete(c, "iat") }), "no issue time"},
		{"NotYetValid", with(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() }), "not valid yet"},
		{"ServiceTokenWithoutEmail", with(func(c jwt.MapClaims) { delete(c, "email"); c["common_name"] = "svc.access" }), "no email claim"},
		{"BlankEmail", with(func(c jwt.MapClaims) { c["email"] = " " }), "no email claim"},
	} {
		_, err := b.v.Verify(t.Context(), b.team.Sign(t, "k1", tc.claims))
		if tc.why == "" {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorContains(t, err, tc.why, tc.name)
		}
	}
}

func TestVerifyAlgorithmAndKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	claims := accessproxytest.Claims("nia@example.com", b.clock.Now())
	valid := b.team.Sign(t, "k1", claims)
	_, err := b.v.Verify(t.Context(), valid)
	require.NoError(t, err)

	signed := func(method jwt.SigningMethod, key any, kid string) string {
		tok := jwt.NewWithClaims(method, claims)
		if kid != "" {
			tok.Header["kid"] = kid
		}
		s, err := tok.SignedString(key)
		require.NoError(t, err)
		return s
	}
	parts := strings.Split(valid, ".")
	other := strings.Split(b.team.Sign(t, "k1", accessproxytest.Claims("boss@example.com", b.clock.Now())), ".")
	for name, assertion := range map[string]string{
		// An HMAC keyed with public material is the classic key-confusion forgery.
		"HS256":           signed(jwt.SigningMethodHS256, []byte("k1"), "k1"),
		"None":            signed(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "k1"),
		"RS384":           signed(jwt.SigningMethodRS384, b.team.Key("k1"), "k1"),
		"PS256":           signed(jwt.SigningMethodPS256, b.team.Key("k1"), "k1"),
		"NoKid":           signed(jwt.SigningMethodRS256, b.team.Key("k1"), ""),
		"WrongKeyForKid":  signed(jwt.SigningMethodRS256, b.team.Key("k2"), "k1"),
		"TamperedPayload": parts[0] + "." + other[1] + "." + parts[2],
		"Garbage":         "not.a.jwt",
		"TooLarge":        strings.Repeat("a", 20<<10),
	} {
		_, err := b.v.Verify(t.Context(), assertion)
		require.Error(t, err, name)
	}
}

// TestUnknownKeyRefreshThrottle: an unknown key id refetches the set at most once per 30
// seconds; a rotated-in key becomes usable after the next allowed fetch.
func TestUnknownKeyRefreshThrottle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	verify := func(kid string) error {
		_, err := b.v.Verify(t.Context(), b.team.Sign(t, kid, accessproxytest.Claims("nia@example.com", b.clock.Now())))
		return err
	}
	require.NoError(t, verify("k1"))
	require.EqualValues(t, 1, b.team.Fetches())
	require.NoError(t, verify("k1"), "a known key needs no fetch")
	require.EqualValues(t, 1, b.team.Fetches())

	// k2 is unknown: the set was fetched a moment ago, so no refetch.
	for range 5 {
		require.Error(t, verify("k2"))
	}
	require.EqualValues(t, 1, b.team.Fetches())

	b.clock.Advance(31 * time.Second)
	require.Error(t, verify("k2"), "still not published")
	require.EqualValues(t, 2, b.team.Fetches())

	b.team.Publish("k2", "k3") // rotation: k1 retired
	// SPEC §Identity proxy: "at most once per 30 seconds": still none 29 s after the last fetch.
	b.clock.Advance(29 * time.Second)
	require.Error(t, verify("k2"), "within 30 seconds of the last fetch")
	require.EqualValues(t, 2, b.team.Fetches())
	b.clock.Advance(time.Second)
	require.NoError(t, verify("k2"), "30 seconds after the last fetch")
	require.EqualValues(t, 3, b.team.Fetches())
	require.NoError(t, verify("k3"))
	require.Error(t, verify("k1"), "retired with the new set")
	require.EqualValues(t, 3, b.team.Fetches())
}

func TestKeySetExpires(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *accessproxy.Config) { c.KeySetTTL = 10 * time.Minute })
	verify := func() error {
		_, err := b.v.Verify(t.Context(), b.team.Assertion(t, "nia@example.com", b.clock.Now()))
		return err
	}
	require.NoError(t, verify())
	b.clock.Advance(9 * time.Minute)
	require.NoError(t, verify())
	require.EqualValues(t, 1, b.team.Fetches())
	b.team.Publish("k2")
	b.clock.Advance(2 * time.Minute)
	require.Error(t, verify(), "the expired set was fetched again and k1 is gone")
	require.EqualValues(t, 2, b.team.Fetches())
}

func TestKeyFetchRules(t *testing.T) {
	t.Parallel()
	t.Run("RedirectsAreNotFollowed", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.team.Handle(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere"+accessproxy.CertsPath, http.StatusFound)
		})
		_, err := b.v.Verify(t.Context(), b.team.Assertion(t, "nia@example.com", b.clock.Now()))
		require.ErrorContains(t, err, "redirect")
		require.EqualValues(t, 1, b.team.Fetches(), "the redirect target was not asked")
	})
	t.Run("SizeIsBounded", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(c *accessproxy.Config) { c.MaxKeySetBytes = 1024 })
		b.team.Handle(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"keys":[],"pad":"` + strings.Repeat("x", 2048) + `"}`))
		})
		_, err := b.v.Verify(t.Context(), b.team.Assertion(t, "nia@example.com", b.clock.Now()))
		require.ErrorContains(t, err, "larger than")
	})
	t.Run("ErrorStatus", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.team.Handle(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) })
		_, err := b.v.Verify(t.Context(), b.team.Assertion(t, "nia@example.com", b.clock.Now()))
		require.ErrorContains(t, err, "502")
	})
	t.Run("DefaultPolicyRefusesLoopback", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(c *accessproxy.Config) { c.AllowAddress = nil })
		_, err := b.v.Verify(t.Context(), b.team.Assertion(t, "nia@example.com", b.clock.Now()))
		require.ErrorIs(t, err, outbound.ErrRefused)
		require.Zero(t, b.team.Fetches())
	})
}

func TestConfiguration(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://Team.CloudflareAccess.com":  "https://team.cloudflareaccess.com",
		"https://team.cloudflareaccess.com/": "https://team.cloudflareaccess.com",
		"http://team.cloudflareaccess.com":   "",
		"team.cloudflareaccess.com":          "",
		"https://team.example.com/path":      "",
		"https://user@team.example.com":      "",
		"https://team.example.com?x=1":       "",
	} {
		got, err := accessproxy.ParseTeamDomain(raw)
		if want == "" {
			require.Error(t, err, raw)
			continue
		}
		require.NoError(t, err, raw)
		require.Equal(t, want, got)
	}
	_, err := accessproxy.New(accessproxy.Config{TeamDomain: accessproxytest.TeamDomain})
	require.ErrorContains(t, err, "together")
	_, err = accessproxy.New(accessproxy.Config{Audience: accessproxytest.Audience})
	require.ErrorContains(t, err, "together")
}
