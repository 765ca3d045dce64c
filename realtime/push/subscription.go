package push

import (
	"crypto/ecdh"
	"encoding/base64"
	"net/netip"
	"net/url"
	"strings"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
)

// MaxEndpointLength bounds a subscription endpoint, in bytes.
const MaxEndpointLength = 2048

// ParseSubscription validates a browser's push subscription: the endpoint an https URL at a
// public host (by policy for an address literal; names such as localhost and *.internal are
// refused), p256dh a P-256 point and auth a 16-byte secret (base64url, padded or not, or
// standard base64). The keys come back as unpadded base64url. Codes: invalid_request.
func ParseSubscription(endpoint, p256dh, auth, label string, policy outbound.Policy) (persist.PushSubscription, error) {
	if err := checkEndpoint(endpoint, policy); err != nil {
		return persist.PushSubscription{}, err
	}
	point, err := decodeKey(p256dh)
	if err != nil {
		return persist.PushSubscription{}, persist.Invalid("keys.p256dh must be base64url")
	}
	if _, err := ecdh.P256().NewPublicKey(point); err != nil || len(point) != 65 {
		return persist.PushSubscription{}, persist.Invalid("keys.p256dh must be an uncompressed P-256 public key (65 bytes)")
	}
	secret, err := decodeKey(auth)
	if err != nil || len(secret) != 16 {
		return persist.PushSubscription{}, persist.Invalid("keys.auth must be a 16-byte secret in base64url")
	}
	return persist.PushSubscription{Endpoint: endpoint, P256dh: base64.RawURLEncoding.EncodeToString(point),
		Auth: base64.RawURLEncoding.EncodeToString(secret), Label: strings.TrimSpace(label)}, nil
}

// checkEndpoint refuses anything but an https URL at a public host. Codes: invalid_request.
func checkEndpoint(endpoint string, policy outbound.Policy) error {
	if endpoint == "" {
		return persist.Invalid("endpoint is required")
	}
	if len(endpoint) > MaxEndpointLength {
		return persist.Invalid("endpoint must be at most %d bytes", MaxEndpointLength)
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Opaque != "" {
		return persist.Invalid("endpoint must be an https URL")
	}
	if u.User != nil || u.Fragment != "" {
		return persist.Invalid("endpoint must not carry credentials or a fragment")
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if ip, err := netip.ParseAddr(host); err == nil {
		if !policy(ip) {
			return persist.Invalid("endpoint must be at a public host")
		}
		return nil
	}
	if !strings.Contains(host, ".") {
		return persist.Invalid("endpoint must be at a public host")
	}
	for _, suffix := range []string{".localhost", ".local", ".internal", ".lan", ".home.arpa", ".intranet", ".corp", ".private"} {
		if host == suffix[1:] || strings.HasSuffix(host, suffix) {
			return persist.Invalid("endpoint must be at a public host")
		}
	}
	return nil
}

// decodeKey reads a browser key: base64url (PushSubscription.toJSON), padded or not, or
// standard base64.
func decodeKey(s string) ([]byte, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	if strings.ContainsAny(s, "+/") {
		return base64.RawStdEncoding.DecodeString(s)
	}
	return base64.RawURLEncoding.DecodeString(s)
}
