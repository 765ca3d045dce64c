package push

import (
	"crypto/x509"
	"net/http"
	"time"

	"github.com/natterchat/natter/outbound"
)

// AddressPolicy decides which IP addresses an outbound push call may connect to: Natter's one
// outbound address policy (outbound). It sees every address a host name resolves to, just
// before the connection is made, so a name that resolves (or re-resolves) into the deployment's
// own network is refused.
type AddressPolicy = outbound.Policy

// newClient is the one outbound client of web push: outbound's, keeping connections to the
// few push services between sends and speaking HTTP/2 where they do. rootCAs replaces the
// system roots when set (tests).
func newClient(policy AddressPolicy, rootCAs *x509.CertPool, timeout time.Duration) *http.Client {
	return outbound.NewClient(outbound.ClientConfig{Policy: policy, Timeout: timeout, RootCAs: rootCAs, IdleConnsPerHost: 8, HTTP2: true})
}
