package webpush

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"time"

	"github.com/natterchat/natter/server/netpolicy"
)

// AddressPolicy decides which IP addresses an outbound push call may connect to: Natter's one
// outbound address policy (netpolicy). It sees every address a host name resolves to, just
// before the connection is made, so a name that resolves (or re-resolves) into the deployment's
// own network is refused.
type AddressPolicy = netpolicy.Policy

// newClient is the one outbound client of web push: no proxy (environment proxies are ignored),
// no redirects (a 3xx is the push service's answer), every connection checked by policy, and
// timeout on the whole exchange. rootCAs replaces the system roots when set (tests).
func newClient(policy AddressPolicy, rootCAs *x509.CertPool, timeout time.Duration) *http.Client {
	dialer := &netpolicy.Dialer{Policy: policy, Timeout: timeout}
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
