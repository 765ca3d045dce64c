package outbound

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPublicOnly holds a literal address of every IANA IPv4 and IPv6 special-purpose range (and
// the multicast and reserved blocks): each is refused; public unicast addresses are admitted.
func TestPublicOnly(t *testing.T) {
	t.Parallel()
	refused := []string{
		// IPv4 Special-Purpose Address Registry.
		"0.0.0.0", "0.1.2.3", // this network
		"10.0.0.1", "10.255.255.255", // private use
		"100.64.0.1", "100.127.255.254", // shared address space
		"127.0.0.1", "127.255.255.254", // loopback
		"169.254.0.1", "169.254.169.254", // link local (cloud metadata)
		"172.16.0.1", "172.31.255.254", // private use
		"192.0.0.1", "192.0.0.9", "192.0.0.170", // IETF protocol assignments, PCP/NAT64 discovery
		"192.0.2.1",                  // documentation TEST-NET-1
		"192.31.196.1",               // AS112-v4
		"192.52.193.1",               // AMT
		"192.88.99.1",                // 6to4 relay anycast
		"192.168.0.1", "192.168.1.1", // private use
		"192.175.48.1",                 // direct delegation AS112
		"198.18.0.1", "198.19.255.254", // benchmarking
		"198.51.100.1",                 // documentation TEST-NET-2
		"203.0.113.1",                  // documentation TEST-NET-3
		"224.0.0.1", "239.255.255.250", // multicast
		"240.0.0.1", "255.255.255.254", // reserved
		"255.255.255.255", // limited broadcast
		// IPv4 carried in IPv6.
		"::ffff:10.0.0.1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", // IPv4-mapped
		"::10.0.0.1",         // IPv4-compatible (deprecated)
		"64:ff9b::a00:1",     // NAT64 of 10.0.0.1
		"64:ff9b::7f00:1",    // NAT64 of 127.0.0.1
		"64:ff9b::5db8:d822", // NAT64 of a public address: the whole translation prefix is refused
		"64:ff9b:1::1",       // local-use translation
		"2002:a00:1::1",      // 6to4 of 10.0.0.1
		"2002:5db8:d822::1",  // 6to4 of a public address
		"2001::1",            // Teredo
		// IPv6 Special-Purpose Address Registry.
		"::", "::1", // unspecified, loopback
		"100::1",                          // discard-only
		"100:0:0:1::1",                    // dummy prefix
		"2001:1::1",                       // PCP anycast
		"2001:2::1",                       // benchmarking
		"2001:3::1",                       // AMT
		"2001:4:112::1",                   // AS112-v6
		"2001:10::1",                      // ORCHID (deprecated)
		"2001:20::1",                      // ORCHIDv2
		"2001:30::1",                      // DRIP
		"2001:db8::1", "2001:db8:ffff::1", // documentation
		"2620:4f:8000::1",         // direct delegation AS112
		"3fff::1",                 // documentation
		"5f00::1",                 // SRv6 SIDs
		"fc00::1", "fd12:3456::1", // unique local
		"fe80::1", "febf::1", // link-local
		"fec0::1",                       // site-local (deprecated)
		"ff02::1", "ff05::2", "ff0e::1", // multicast
		"4000::1", "8000::1", "e000::1", // outside 2000::/3: unassigned
		"fe80::1%eth0", // zoned
	}
	for _, a := range refused {
		require.False(t, PublicOnly(netip.MustParseAddr(a)), "%s must be refused", a)
	}
	require.False(t, PublicOnly(netip.Addr{}), "the zero address")
	for _, a := range []string{"93.184.216.34", "1.1.1.1", "8.8.8.8", "100.63.255.255", "100.128.0.1", "172.32.0.1",
		"192.0.1.255", "198.17.255.255", "198.20.0.1", "223.255.255.254", "::ffff:8.8.8.8",
		"2606:4700:4700::1111", "2a00:1450:4001::1", "2001:200::1", "2001:4860:4860::8888", "2620:4f:8001::1"} {
		require.True(t, PublicOnly(netip.MustParseAddr(a)), "%s must be admitted", a)
	}
}

func TestPublicOrLoopback(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"127.0.0.1", "::1", "::ffff:127.0.0.1", "93.184.216.34"} {
		require.True(t, PublicOrLoopback(netip.MustParseAddr(a)), a)
	}
	for _, a := range []string{"10.0.0.1", "169.254.169.254", "fd00::1", "64:ff9b::7f00:1"} {
		require.False(t, PublicOrLoopback(netip.MustParseAddr(a)), a)
	}
}

type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestDialer: a name with any refused answer is refused whole, before any connection; a literal
// address is judged as it is; an admitted one is dialled.
func TestDialer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	res := fakeResolver{
		"mixed.example":    {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.1")},
		"internal.example": {netip.MustParseAddr("169.254.169.254")},
		"local.example":    {netip.MustParseAddr("127.0.0.1")},
	}
	strict := &Dialer{Resolver: res}
	for _, target := range []string{"mixed.example:443", "internal.example:80", "10.0.0.1:80", "[::1]:80", "local.example:" + port} {
		_, err := strict.DialContext(t.Context(), "tcp", target)
		require.True(t, errors.Is(err, ErrRefused), "%s: %v", target, err)
	}
	loose := &Dialer{Resolver: res, Policy: PublicOrLoopback}
	c, err := loose.DialContext(t.Context(), "tcp", "local.example:"+port)
	require.NoError(t, err)
	_ = c.Close()
	_, err = loose.DialContext(t.Context(), "tcp", "mixed.example:443")
	require.True(t, errors.Is(err, ErrRefused))
}
