package signin

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/natterchat/natter/server/netpolicy"
)

// Policy decides whether an outbound sign-in call may connect to an address: Natter's one
// outbound address policy (netpolicy).
type Policy = netpolicy.Policy

// ErrAddressRefused is returned (wrapped) when a destination resolves to an address the policy
// refuses (it is netpolicy.ErrRefused).
var ErrAddressRefused = netpolicy.ErrRefused

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
		policy = netpolicy.PublicOnly
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	dialer := &netpolicy.Dialer{Policy: policy, Timeout: timeout}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
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
