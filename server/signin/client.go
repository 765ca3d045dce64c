package signin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"
)

// Policy decides whether an outbound sign-in call may connect to an address.
type Policy func(netip.Addr) bool

// ErrAddressRefused is returned (wrapped) when a destination resolves to an address the policy
// refuses.
var ErrAddressRefused = errors.New("destination address refused")

// nonPublic lists special-purpose ranges PublicOnly refuses beyond what netip classifies.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: may embed a private IPv4 address
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local NAT64
	netip.MustParsePrefix("100::/64"),        // discard
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments (Teredo among them)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: may embed a private IPv4 address
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
}

// PublicOnly is the default Policy: it admits only public unicast addresses, refusing loopback,
// private, link-local, multicast, unspecified and reserved ones (IPv4-mapped IPv6 addresses are
// judged as IPv4).
func PublicOnly(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// publicOrLoopback admits public addresses and loopback ones: the policy of an OIDC issuer that
// is itself a loopback URL (loopback development).
func publicOrLoopback(a netip.Addr) bool { return a.Unmap().IsLoopback() || PublicOnly(a) }

// DefaultTimeout bounds each outbound sign-in call (and OIDC discovery, §Limits).
const DefaultTimeout = 30 * time.Second

// newClient returns the HTTP client of every outbound sign-in call: no proxy (the environment's
// proxy settings are ignored), no redirects (a 3xx comes back as the response, and callers treat
// it as a failure), no kept-alive connections, and connections only to addresses policy
// admits. A host name is resolved first and refused when any of its addresses is refused (a
// mixed public and private answer is refused whole); the connection then goes to a checked
// address, so a second DNS answer cannot swap it.
func newClient(policy Policy, timeout time.Duration) *http.Client {
	if policy == nil {
		policy = PublicOnly
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	dialer := &net.Dialer{Timeout: timeout}
	transport := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			host, portText, err := net.SplitHostPort(address)
			if err != nil {
				return nil, err
			}
			port, err := strconv.ParseUint(portText, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("port %q: %w", portText, err)
			}
			addrs, err := resolve(ctx, host)
			if err != nil {
				return nil, err
			}
			for _, a := range addrs {
				if !policy(a) {
					return nil, fmt.Errorf("%s resolves to %s: %w", host, a, ErrAddressRefused)
				}
			}
			var firstErr error
			for _, a := range addrs {
				conn, err := dialer.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
				if err == nil {
					return conn, nil
				}
				if firstErr == nil {
					firstErr = err
				}
			}
			return nil, firstErr
		},
		DisableKeepAlives:     true,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Transport:     transport,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s has no addresses", host)
	}
	return addrs, nil
}

// errTooLarge is returned by readLimited for a body over its limit.
var errTooLarge = errors.New("response body too large")

// readLimited reads a whole body of at most limit bytes.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("more than %d bytes: %w", limit, errTooLarge)
	}
	return body, nil
}
