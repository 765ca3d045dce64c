package webpush

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// AddressPolicy decides which IP addresses an outbound push call may connect to. It sees every
// address a host name resolves to, just before the connection is made, so a name that resolves
// (or re-resolves) into the deployment's own network is refused.
type AddressPolicy func(netip.Addr) bool

// nonPublic are ranges that are neither private nor loopback by the standard library's
// definitions but are still not the public internet.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: may translate to anything
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
}

// PublicOnly is the default policy: public unicast addresses only; never loopback, private,
// link-local, multicast, unspecified or reserved ones.
func PublicOnly(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// PublicOrLoopback admits loopback addresses besides public ones: for tests, whose push services
// run on httptest listeners. Never use it in a deployment.
func PublicOrLoopback(a netip.Addr) bool { return a.Unmap().IsLoopback() || PublicOnly(a) }

// errAddressRefused is the dial error for an address the policy refuses.
var errAddressRefused = errors.New("destination address refused by the outbound policy")

// newClient is the one outbound client of web push: no proxy (environment proxies are ignored),
// no redirects (a 3xx is the push service's answer), every connection checked by policy, and
// timeout on the whole exchange. rootCAs replaces the system roots when set (tests).
func newClient(policy AddressPolicy, rootCAs *x509.CertPool, timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return err
		}
		if !policy(ip) {
			return fmt.Errorf("%w: %s", errAddressRefused, ip)
		}
		return nil
	}}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: rootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{Transport: transport, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
