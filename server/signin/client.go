package signin

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/natterchat/natter/outbound"
)

// DefaultTimeout bounds each outbound sign-in call (and OIDC discovery, §Limits).
const DefaultTimeout = 30 * time.Second

// newClient returns the HTTP client of every outbound sign-in call: outbound's, with no
// kept-alive connection, so each call resolves and checks its destination afresh.
func newClient(policy outbound.Policy, timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return outbound.NewClient(outbound.ClientConfig{Policy: policy, Timeout: timeout})
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
