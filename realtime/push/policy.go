package push

import (
	"crypto/x509"
	"net/http"
	"time"

	"github.com/natterchat/natter/outbound"
)

// newClient is the one outbound client of web push: outbound's, keeping connections to the
// few push services between sends and speaking HTTP/2 where they do. rootCAs replaces the
// system roots when set (tests).
func newClient(policy outbound.Policy, rootCAs *x509.CertPool, timeout time.Duration) *http.Client {
	return outbound.NewClient(outbound.ClientConfig{Policy: policy, Timeout: timeout, RootCAs: rootCAs, IdleConnsPerHost: 8, HTTP2: true})
}
