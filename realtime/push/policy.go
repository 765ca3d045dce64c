package push

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

	"github.com/natterchat/natter/server/callback"
)

// AddressPolicy decides which IP addresses an outbound push call may connect to. It sees every
// address a host name resolves to, just before the connection is made, so a name that resolves
// (or re-resolves) into the deployment's own network is refused.
type AddressPolicy func(netip.Addr) bool

// PublicOnly is the default policy: the one public-address rule of Natter's outbound calls,
// callback.PublicOnly (public unicast only; never loopback, private, link-local, multicast,
// unspecified or reserved).
func PublicOnly(a netip.Addr) bool { return callback.PublicOnly(a) }

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
