package signin

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChallenge(t *testing.T) {
	t.Parallel()
	// RFC 7636, appendix B.
	require.Equal(t, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", Challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"))
	v := NewSecret()
	require.True(t, ValidVerifier(v))
	require.True(t, ValidChallenge(Challenge(v)))
	require.NotEqual(t, v, NewSecret())
}

func TestValidChallengeAndVerifier(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		strings.Repeat("a", 43):           true,
		strings.Repeat("-_Az09", 7) + "x": true,
		strings.Repeat("a", 42):           false,
		strings.Repeat("a", 44):           false,
		strings.Repeat("a", 42) + "=":     false,
		strings.Repeat("a", 42) + "+":     false,
		strings.Repeat("a", 42) + "/":     false,
		"":                                false,
	} {
		require.Equal(t, want, ValidChallenge(s), "challenge %q", s)
	}
	for s, want := range map[string]bool{
		strings.Repeat("a", 43):       true,
		strings.Repeat("a", 128):      true,
		strings.Repeat("a", 42):       false,
		strings.Repeat("a", 129):      false,
		strings.Repeat("a", 42) + ".": false,
	} {
		require.Equal(t, want, ValidVerifier(s), "verifier %q", s)
	}
}

func TestGrants(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"0123456789abcdef0123456789abcdef":  true,
		"0123456789ABCDEF0123456789abcdef":  false, // protocol 1 is lowercase hex
		"0123456789abcdef0123456789abcdeg":  false,
		"0123456789abcdef0123456789abcde":   false,
		"0123456789abcdef0123456789abcdef0": false,
		strings.Repeat("A-_z", 10) + "abc":  true,
		strings.Repeat("A", 42) + "=":       false, // protocol 2 is unpadded
		strings.Repeat("A", 42) + "/":       false,
		strings.Repeat("A", 44):             false,
		"":                                  false,
		"ABCD-EFGH-JKLM":                    false,
	} {
		require.Equal(t, want, ValidGrant(s), "grant %q", s)
	}
	for range 20 {
		g1, g2 := NewGrant(DesktopProtocolLegacy), NewGrant(DesktopProtocolCurrent)
		require.Regexp(t, `^[a-f0-9]{32}$`, g1)
		require.Regexp(t, `^[A-Za-z0-9_-]{43}$`, g2)
		require.True(t, ValidGrant(g1))
		require.True(t, ValidGrant(g2))
	}
}

func TestDesktopCallback(t *testing.T) {
	t.Parallel()
	require.Equal(t, "natter:/auth/callback?code=abc", DesktopCallback(DesktopProtocolCurrent, "natter", "natter-legacy", "abc"))
	require.Equal(t, "natter-legacy://auth/callback?code=abc", DesktopCallback(DesktopProtocolLegacy, "natter", "natter-legacy", "abc"))
}

func TestCheckScheme(t *testing.T) {
	t.Parallel()
	for s, ok := range map[string]bool{
		"natter":               true,
		"natter-legacy":        true,
		"chat.example.desktop": true,
		"x+y":                  true,
		"":                     false,
		"Natter":               false,
		"1natter":              false,
		"-natter":              false,
		"nat ter":              false,
		"natter:":              false,
		"https":                false,
		"javascript":           false,
		"file":                 false,
	} {
		err := CheckScheme(s)
		require.Equal(t, ok, err == nil, "scheme %q: %v", s, err)
	}
}

func TestValidOrg(t *testing.T) {
	t.Parallel()
	for s, ok := range map[string]bool{
		"natterchat": true, "Natter-Chat": true, "a": true, strings.Repeat("a", 39): true,
		"": false, "-a": false, "a-": false, "a--b": false, "a_b": false, strings.Repeat("a", 40): false, "a/b": false,
	} {
		require.Equal(t, ok, ValidOrg(s), s)
	}
}
