package callback

import "net/netip"

// reserved are special-purpose ranges (IANA registries) that the standard library's
// predicates do not cover: shared, documentation, benchmarking, translation and future-use
// space. None of them is a public destination.
var reserved = mustPrefixes(
	"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "198.18.0.0/15",
	"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4",
	"::/8", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "2002::/16",
	"3fff::/20", "5f00::/16", "fec0::/10",
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// PublicOnly is the strict address policy, the default: it admits only global unicast
// addresses outside private, loopback, link-local, multicast, unspecified and reserved ranges.
// IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry.
func PublicOnly(addr netip.Addr) bool {
	a := addr.Unmap()
	if !a.IsValid() || !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() ||
		a.IsMulticast() || a.IsUnspecified() || a.Zone() != "" {
		return false
	}
	for _, p := range reserved {
		if p.Contains(a) {
			return false
		}
	}
	return true
}
