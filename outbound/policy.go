package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// Policy decides whether an outbound call may connect to an address.
type Policy func(netip.Addr) bool

// ErrRefused is returned (wrapped) when a destination resolves to an address the policy refuses.
var ErrRefused = errors.New("destination address refused")

// special are the ranges of the IANA IPv4 and IPv6 Special-Purpose Address Registries, plus the
// multicast, deprecated site-local and reserved blocks, none of which is a public destination.
// Ranges the registries mark globally reachable but that embed or relay to another address
// (NAT64, 6to4, Teredo) are refused too: they could carry a private IPv4 address.
var special = prefixes(
	// IPv4 (RFC 6890 and successors).
	"0.0.0.0/8",          // "this network"
	"10.0.0.0/8",         // private use
	"100.64.0.0/10",      // shared address space (carrier-grade NAT)
	"127.0.0.0/8",        // loopback
	"169.254.0.0/16",     // link local
	"172.16.0.0/12",      // private use
	"192.0.0.0/24",       // IETF protocol assignments
	"192.0.2.0/24",       // documentation (TEST-NET-1)
	"192.31.196.0/24",    // AS112-v4
	"192.52.193.0/24",    // AMT
	"192.88.99.0/24",     // deprecated 6to4 relay anycast
	"192.168.0.0/16",     // private use
	"192.175.48.0/24",    // direct delegation AS112 service
	"198.18.0.0/15",      // benchmarking
	"198.51.100.0/24",    // documentation (TEST-NET-2)
	"203.0.113.0/24",     // documentation (TEST-NET-3)
	"224.0.0.0/4",        // multicast
	"240.0.0.0/4",        // reserved for future use, limited broadcast
	"::/8",               // IETF reserved: unspecified, loopback, IPv4-compatible
	"64:ff9b::/96",       // IPv4/IPv6 translation (NAT64), may embed a private IPv4 address
	"64:ff9b:1::/48",     // local-use IPv4/IPv6 translation
	"100::/64",           // discard-only
	"100:0:0:1::/64",     // dummy IPv6 prefix
	"2001::/23",          // IETF protocol assignments (Teredo, benchmarking, ORCHID, AMT, ...)
	"2001:db8::/32",      // documentation
	"2002::/16",          // 6to4, embeds an IPv4 address
	"2620:4f:8000::/48",  // direct delegation AS112 service
	"3fff::/20",          // documentation
	"5f00::/16",          // segment routing (SRv6) SIDs
	"fc00::/7",           // unique local
	"fe80::/10",          // link-local unicast
	"fec0::/10",          // deprecated site-local
	"ff00::/8",           // multicast
	"255.255.255.255/32", // limited broadcast (inside 240.0.0.0/4; listed for the reader)
)

// globalUnicast6 is the only IPv6 block allocated for global unicast; everything outside it is
// unassigned or reserved.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// PublicOnly is the default policy: it admits only public unicast addresses, refusing every
// special-purpose range (see special), IPv6 outside 2000::/3, and addresses with a zone.
// IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry.
func PublicOnly(addr netip.Addr) bool {
	a := addr.Unmap()
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	if a.Is6() && !globalUnicast6.Contains(a) {
		return false
	}
	for _, p := range special {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// PublicOrLoopback admits loopback addresses besides public ones: for tests, whose receivers run
// on httptest listeners, and for an OIDC issuer configured at a loopback URL (development).
// Never the policy of destinations users choose.
func PublicOrLoopback(a netip.Addr) bool { return a.Unmap().IsLoopback() || PublicOnly(a) }

// Resolver looks host names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer connects only to addresses its policy admits. A host name is resolved first and the
// call refused when any answer is refused (a mixed public and private answer is refused whole);
// the connection then goes to a checked address, never resolving again, so a second DNS answer
// cannot swap it, and every address dialled is checked once more just before the connect.
type Dialer struct {
	// Policy admits addresses. Default PublicOnly.
	Policy Policy
	// Resolver resolves host names. Default net.DefaultResolver.
	Resolver Resolver
	// Timeout bounds each connection attempt. Default 0: only the context bounds it.
	Timeout time.Duration
}

// DialContext is the dialer of an http.Transport. Errors wrap ErrRefused for a refused address;
// their text names the host and address, for logs and stored records, never for a client.
func (d *Dialer) DialContext(ctx context.Context, network, hostport string) (net.Conn, error) {
	policy := d.Policy
	if policy == nil {
		policy = PublicOnly
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	addrs, err := d.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if !policy(a) {
			return nil, fmt.Errorf("%w: %s resolves to %s, which is not a public address", ErrRefused, host, a)
		}
	}
	nd := &net.Dialer{Timeout: d.Timeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !policy(ap.Addr()) {
			return fmt.Errorf("%w: %s", ErrRefused, address)
		}
		return nil
	}}
	var first error
	for _, a := range addrs {
		conn, err := nd.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

func (d *Dialer) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	return addrs, nil
}
