package blob

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/natterchat/natter/server/netpolicy"
)

// S3Config configures an S3-compatible object store, reached with path-style requests
// (<endpoint>/<bucket>/<key>) signed with AWS Signature Version 4.
type S3Config struct {
	// Endpoint is the store's base URL, such as https://s3.eu-west-1.amazonaws.com. Required.
	Endpoint string
	// Bucket holds the objects. Required.
	Bucket string
	// Region signs requests. Default "us-east-1".
	Region string
	// AccessKeyID and SecretAccessKey are the credentials. Required.
	AccessKeyID, SecretAccessKey string
	// AllowAddress decides which addresses the store may be dialled at, checked on the address
	// actually connected to. Default netpolicy.PublicOnly, Natter's one outbound address policy,
	// so the store cannot be pointed into the deployment's own network.
	AllowAddress func(netip.Addr) bool
	// Timeout bounds the wait for response headers and for each read of a response body.
	// Default 30s.
	Timeout time.Duration
	// TempDir holds an upload while it is measured and hashed before it is sent. Default
	// os.TempDir().
	TempDir string
	// Clock dates signatures. Default time.Now.
	Clock func() time.Time
}

// S3 keeps objects in a bucket of an S3-compatible store. Its HTTP client uses no proxy,
// follows no redirects and dials only addresses AllowAddress admits; error text from the store
// is cut to 512 bytes.
type S3 struct {
	cfg    S3Config
	base   *url.URL
	client *http.Client
}

var _ Store = (*S3)(nil)

// maxErrorText bounds the store's diagnostic text kept in an error, in bytes.
const maxErrorText = 512

// emptySHA256 is the payload hash of a request without a body.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// NewS3 validates cfg and builds the store's client.
func NewS3(cfg S3Config) (*S3, error) {
	base, err := url.Parse(cfg.Endpoint)
	if err != nil || base.Host == "" || (base.Scheme != "https" && base.Scheme != "http") || base.User != nil || base.RawQuery != "" {
		return nil, errors.New("blob: the S3 endpoint must be an absolute http(s) URL without credentials or query")
	}
	if cfg.Bucket == "" || strings.ContainsAny(cfg.Bucket, "/?#") {
		return nil, errors.New("blob: an S3 bucket name is required (no slash)")
	}
	if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
		return nil, errors.New("blob: S3 credentials are required")
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.AllowAddress == nil {
		cfg.AllowAddress = netpolicy.PublicOnly
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	dialer := &netpolicy.Dialer{Policy: cfg.AllowAddress, Timeout: cfg.Timeout}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ResponseHeaderTimeout: cfg.Timeout,
		TLSHandshakeTimeout:   cfg.Timeout,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
	}
	client := &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	base.Path = strings.TrimRight(base.Path, "/")
	return &S3{cfg: cfg, base: base, client: client}, nil
}

// Put implements Store. The object is spooled to a temporary file first: the store needs its
// length and hash before the first byte is sent.
func (s *S3) Put(ctx context.Context, key string, r io.Reader) (Info, error) {
	if !ValidKey(key) {
		return Info{}, ErrInvalidKey
	}
	f, err := os.CreateTemp(s.cfg.TempDir, "natter-upload-*")
	if err != nil {
		return Info{}, fmt.Errorf("blob: spool: %w", err)
	}
	defer func() {
		_ = f.Close()
		_ = os.Remove(f.Name())
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), contextReader{ctx, r})
	if err != nil {
		return Info{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Info{}, fmt.Errorf("blob: spool: %w", err)
	}
	sum := h.Sum(nil)
	resp, err := s.do(ctx, http.MethodPut, key, io.NopCloser(f), n, hex.EncodeToString(sum), nil)
	if err != nil {
		return Info{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Info{}, storeError(resp, "put", key)
	}
	return Info{Size: n, SHA256: sum}, nil
}

// Open implements Store. The object is read with ranged GETs as the caller reads and seeks.
func (s *S3) Open(ctx context.Context, key string) (Object, error) {
	if !ValidKey(key) {
		return Object{}, ErrInvalidKey
	}
	resp, err := s.do(ctx, http.MethodHead, key, nil, 0, emptySHA256, nil)
	if err != nil {
		return Object{}, err
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return Object{}, ErrNotFound
	case resp.StatusCode != http.StatusOK:
		return Object{}, storeError(resp, "head", key)
	}
	size, err := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
	if err != nil || size < 0 {
		return Object{}, fmt.Errorf("blob: s3 head %s: no usable Content-Length", key)
	}
	return Object{ReadSeekCloser: &s3Reader{ctx: ctx, s: s, key: key, size: size}, Size: size}, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	if !ValidKey(key) {
		return ErrInvalidKey
	}
	resp, err := s.do(ctx, http.MethodDelete, key, nil, 0, emptySHA256, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusNoContent, http.StatusNotFound:
		return nil
	}
	return storeError(resp, "delete", key)
}

// do sends one signed request for key; the response body's reads are bounded by the timeout.
func (s *S3) do(ctx context.Context, method, key string, body io.ReadCloser, length int64, payloadHash string, header http.Header) (*http.Response, error) {
	u := *s.base
	u.Path = s.base.Path + "/" + s.cfg.Bucket + "/" + key
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("blob: s3 request: %w", err)
	}
	req.ContentLength = length
	for k, v := range header {
		req.Header[k] = v
	}
	signV4(req, payloadHash, s.cfg.Region, s.cfg.AccessKeyID, s.cfg.SecretAccessKey, s.cfg.Clock())
	resp, err := s.client.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("blob: s3 %s %s: %w", strings.ToLower(method), key, err)
	}
	resp.Body = &timedBody{body: resp.Body, timeout: s.cfg.Timeout, cancel: cancel}
	return resp, nil
}

// storeError describes a refusal of the store, with at most 512 bytes of its text.
func storeError(resp *http.Response, op, key string) error {
	text, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorText))
	return fmt.Errorf("blob: s3 %s %s: status %d: %s", op, key, resp.StatusCode, strings.ToValidUTF8(string(text), ""))
}

// timedBody cancels its request when one read takes longer than timeout.
type timedBody struct {
	body    io.ReadCloser
	timeout time.Duration
	cancel  context.CancelFunc
}

func (b *timedBody) Read(p []byte) (int, error) {
	t := time.AfterFunc(b.timeout, b.cancel)
	n, err := b.body.Read(p)
	if !t.Stop() && err != nil {
		err = fmt.Errorf("blob: s3 read took longer than %s: %w", b.timeout, err)
	}
	return n, err
}

func (b *timedBody) Close() error {
	err := b.body.Close()
	b.cancel()
	return err
}

// s3Reader reads an object from its current offset with a ranged GET, opened on the first read
// after a seek. It keeps the context of the request it serves, like an HTTP request body.
type s3Reader struct {
	ctx  context.Context
	s    *S3
	key  string
	size int64
	off  int64
	body io.ReadCloser
}

func (r *s3Reader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	if r.body == nil {
		h := http.Header{"Range": {"bytes=" + strconv.FormatInt(r.off, 10) + "-"}}
		resp, err := r.s.do(r.ctx, http.MethodGet, r.key, nil, 0, emptySHA256, h)
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusPartialContent && !(resp.StatusCode == http.StatusOK && r.off == 0) {
			err := storeError(resp, "get", r.key)
			resp.Body.Close()
			return 0, err
		}
		r.body = resp.Body
	}
	n, err := r.body.Read(p)
	r.off += int64(n)
	if errors.Is(err, io.EOF) && r.off < r.size {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (r *s3Reader) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = r.off + offset
	case io.SeekEnd:
		abs = r.size + offset
	default:
		return 0, errors.New("blob: invalid whence")
	}
	if abs < 0 {
		return 0, errors.New("blob: negative position")
	}
	if abs != r.off && r.body != nil {
		_ = r.body.Close()
		r.body = nil
	}
	r.off = abs
	return abs, nil
}

func (r *s3Reader) Close() error {
	if r.body == nil {
		return nil
	}
	err := r.body.Close()
	r.body = nil
	return err
}

// signV4 signs req with AWS Signature Version 4 for service s3: the host, every x-amz-* header
// and Range are signed, with payloadHash as the body's hash.
func signV4(req *http.Request, payloadHash, region, accessKey, secretKey string, now time.Time) {
	now = now.UTC()
	amzDate := now.Format("20060102T150405Z")
	day := now.Format("20060102")
	req.Header.Set("X-Amz-Date", amzDate)
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	headers := map[string]string{"host": req.URL.Host}
	for k, v := range req.Header {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "x-amz-") || lk == "range" || lk == "content-type" || lk == "content-md5" {
			headers[lk] = strings.TrimSpace(strings.Join(v, ","))
		}
	}
	names := make([]string, 0, len(headers))
	for k := range headers {
		names = append(names, k)
	}
	sort.Strings(names)
	var canonHeaders strings.Builder
	for _, k := range names {
		canonHeaders.WriteString(k + ":" + headers[k] + "\n")
	}
	signed := strings.Join(names, ";")
	path := req.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	canonical := strings.Join([]string{req.Method, path, canonicalQuery(req.URL.Query()), canonHeaders.String(), signed, payloadHash}, "\n")
	scope := day + "/" + region + "/s3/aws4_request"
	digest := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(digest[:])
	key := hmacSHA256([]byte("AWS4"+secretKey), day)
	for _, part := range []string{region, "s3", "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	sig := hex.EncodeToString(hmacSHA256(key, toSign))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+accessKey+"/"+scope+
		", SignedHeaders="+signed+", Signature="+sig)
}

func canonicalQuery(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		vs := append([]string(nil), q[k]...)
		sort.Strings(vs)
		for _, v := range vs {
			parts = append(parts, awsEscape(k)+"="+awsEscape(v))
		}
	}
	return strings.Join(parts, "&")
}

// awsEscape percent-encodes everything but unreserved characters, as SigV4 wants.
func awsEscape(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}
