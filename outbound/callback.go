package outbound

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"
)

// Header names of a signed callback (CONTRACT.md: the spec's X-Service-* with our vendor word).
const (
	HeaderTimestamp = "X-Natter-Timestamp"
	HeaderSignature = "X-Natter-Signature"
	HeaderEventID   = "X-Natter-Event-ID"
)

// CallbackConfig configures a CallbackClient.
type CallbackConfig struct {
	// AllowAddr decides whether a resolved address may be called. Every address a host
	// resolves to must pass, or the call is refused. Default PublicOnly; tests that
	// call receivers on 127.0.0.1 widen it.
	AllowAddr func(netip.Addr) bool
	// Resolver resolves callback hosts. Default net.DefaultResolver.
	Resolver Resolver
	// Timeout bounds a whole call: resolution, connection, request and reading the response.
	// Default 10s.
	Timeout time.Duration
	// MaxResponseBytes bounds how much of a response body is read and kept; the rest is
	// dropped. Default 64 KiB.
	MaxResponseBytes int64
}

// CallbackClient makes signed callbacks. It is safe for concurrent use.
type CallbackClient struct {
	cfg  CallbackConfig
	http *http.Client
}

// NewCallbackClient validates cfg and applies its defaults.
func NewCallbackClient(cfg CallbackConfig) (*CallbackClient, error) {
	if cfg.AllowAddr == nil {
		cfg.AllowAddr = PublicOnly
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("outbound: CallbackConfig.Timeout must be positive, not %s", cfg.Timeout)
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = 64 << 10
	}
	if cfg.MaxResponseBytes < 0 {
		return nil, fmt.Errorf("outbound: CallbackConfig.MaxResponseBytes must be positive, not %d", cfg.MaxResponseBytes)
	}
	// No kept-alive connection: every call resolves and checks its destination afresh.
	client := NewClient(ClientConfig{Policy: cfg.AllowAddr, Resolver: cfg.Resolver, Timeout: cfg.Timeout})
	return &CallbackClient{cfg: cfg, http: client}, nil
}

// Callback is one callback.
type Callback struct {
	URL string
	// Secret signs the body; see Sign.
	Secret string
	// Body is the raw JSON sent, byte for byte what was signed.
	Body []byte
	// Header adds headers (such as HeaderEventID).
	Header map[string]string
}

// CallbackResult is what a callback produced. Err is set when no HTTP answer was had (refused, network,
// timeout); otherwise Status and Body (at most MaxResponseBytes) hold the answer.
type CallbackResult struct {
	Status    int
	Body      []byte
	Truncated bool
	Err       error
}

// OK reports a 2xx answer.
func (r CallbackResult) OK() bool { return r.Err == nil && r.Status >= 200 && r.Status < 300 }

// Problem says what went wrong, for the stored record of a call: "" for a 2xx answer.
func (r CallbackResult) Problem() string {
	switch {
	case r.Err != nil:
		return r.Err.Error()
	case !r.OK():
		return fmt.Sprintf("the callback answered HTTP %d", r.Status)
	}
	return ""
}

// Failure is the sentence a person is shown for a failed call: one fixed sentence per class of
// failure (refused, unresolvable, unreachable, too slow, an error status, an unreadable answer),
// "" for a 2xx answer. Unlike Problem it never names a resolver, a resolved address or any
// other detail of the network the server sits in: any user may create a workspace and a
// command, and must not map internal names through it. The detail stays in Problem, for the
// stored record and the log.
func (r CallbackResult) Failure() string {
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case r.OK():
		return ""
	case r.Err == nil:
		return fmt.Sprintf("it answered HTTP %d", r.Status)
	case errors.Is(r.Err, ErrRefused):
		return "its address is not allowed: callbacks go only to public addresses over http(s)"
	case errors.As(r.Err, &dnsErr):
		return "its host name could not be resolved"
	case errors.Is(r.Err, context.DeadlineExceeded) || (errors.As(r.Err, &netErr) && netErr.Timeout()):
		return "it did not answer in time"
	case r.Status != 0:
		return "its answer could not be read"
	default:
		return "it could not be reached"
	}
}

// Post sends a signed JSON callback. It never returns a response it did not bound: the body is
// cut at MaxResponseBytes and the whole call at Timeout.
func (c *CallbackClient) Post(ctx context.Context, req Callback) CallbackResult {
	u, err := url.Parse(req.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return CallbackResult{Err: fmt.Errorf("%w: the callback URL must be an absolute http(s) URL without credentials", ErrRefused)}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(req.Body))
	if err != nil {
		return CallbackResult{Err: err}
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("User-Agent", "Natter-Callback/1")
	hr.Header.Set(HeaderTimestamp, ts)
	hr.Header.Set(HeaderSignature, Sign(req.Secret, ts, req.Body))
	for k, v := range req.Header {
		hr.Header.Set(k, v)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return CallbackResult{Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes+1))
	res := CallbackResult{Status: resp.StatusCode, Body: body}
	if int64(len(body)) > c.cfg.MaxResponseBytes {
		res.Body, res.Truncated = body[:c.cfg.MaxResponseBytes], true
	}
	if err != nil {
		res.Err = fmt.Errorf("read the response: %w", err)
	}
	return res
}

// Sign is the signature of integration rule 3: "sha256=" and the hex HMAC-SHA256, keyed by the
// signing secret, of "<timestamp>.<raw-json-body>".
func Sign(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a signature as a receiver would, in constant time.
func Verify(secret, timestamp string, body []byte, signature string) bool {
	return hmac.Equal([]byte(Sign(secret, timestamp, body)), []byte(signature))
}
