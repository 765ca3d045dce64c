package signin

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"golang.org/x/oauth2"
)

// Desktop handoff protocol versions (§Versioning).
const (
	// DesktopProtocolLegacy redirects to <legacy_desktop_scheme>://auth/callback with a 32-character
	// lowercase hex grant; it is served only on default cookie names.
	DesktopProtocolLegacy = 1
	// DesktopProtocolCurrent redirects to <desktop_scheme>:/auth/callback with a 43-character
	// unpadded base64url grant.
	DesktopProtocolCurrent = 2
)

// Default desktop callback schemes (CONTRACT.md).
const (
	DefaultDesktopScheme       = "natter"
	DefaultLegacyDesktopScheme = "natter-legacy"
)

// NewSecret returns 32 random bytes as 43 unpadded base64url characters: OAuth state, browser
// bindings and PKCE verifiers.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Challenge is the S256 PKCE code challenge of verifier: unpadded base64url of its SHA-256.
func Challenge(verifier string) string { return oauth2.S256ChallengeFromVerifier(verifier) }

// ValidChallenge reports whether s has the shape of an S256 code challenge: exactly 43
// base64url characters.
func ValidChallenge(s string) bool { return len(s) == 43 && isBase64URL(s) }

// ValidVerifier reports whether s is an acceptable PKCE code verifier: 43 to 128 base64url
// characters.
func ValidVerifier(s string) bool { return len(s) >= 43 && len(s) <= 128 && isBase64URL(s) }

// ValidSecret reports whether s has the shape NewSecret produces.
func ValidSecret(s string) bool { return ValidChallenge(s) }

// NewGrant returns a one-time desktop grant in the format of the protocol: 32 lowercase hex
// characters for protocol 1, 43 unpadded base64url characters for protocol 2.
func NewGrant(protocol int) string {
	if protocol == DesktopProtocolLegacy {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}
	return NewSecret()
}

// ValidGrant reports whether s is in exactly one of the two grant formats.
func ValidGrant(s string) bool {
	switch len(s) {
	case 32:
		for _, c := range s {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
		return true
	case 43:
		return isBase64URL(s)
	}
	return false
}

// DesktopCallback is the URL the browser is sent to after a desktop sign-in: the current
// protocol's `<scheme>:/auth/callback?code=<grant>`, or the legacy `<legacy>://auth/callback?code=<grant>`.
func DesktopCallback(protocol int, scheme, legacyScheme, grant string) string {
	if protocol == DesktopProtocolLegacy {
		return legacyScheme + "://auth/callback?code=" + grant
	}
	return scheme + ":/auth/callback?code=" + grant
}

// CheckScheme validates a desktop callback scheme (RFC 3986: a letter, then letters, digits,
// '+', '-' or '.'), lowercase, and not one a browser would handle itself.
func CheckScheme(s string) error {
	if s == "" {
		return fmt.Errorf("must not be empty")
	}
	for i, c := range s {
		letter := c >= 'a' && c <= 'z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return fmt.Errorf("%q must be a lowercase URI scheme such as %s (a letter, then letters, digits, '+', '-' or '.')", s, DefaultDesktopScheme)
		}
	}
	switch strings.ToLower(s) {
	case "http", "https", "javascript", "data", "file", "blob", "about", "vbscript", "ws", "wss":
		return fmt.Errorf("%q is a scheme browsers handle themselves; choose the desktop app's own scheme", s)
	}
	return nil
}

func isBase64URL(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
