package blob

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/natterchat/natter/outbound"
)

// S3Config configures an S3-compatible object store, reached with path-style requests
// (<endpoint>/<bucket>/<key>) signed with AWS Signature Version 4, through
// github.com/minio/minio-go/v7 over Natter's own transport (the address policy below).
type S3Config struct {
	// Endpoint is the store's base URL, such as https://s3.eu-west-1.amazonaws.com: a scheme and
	// a host, no path. Required.
	Endpoint string
	// Bucket holds the objects. Required.
	Bucket string
	// Region signs requests. Default "us-east-1".
	Region string
	// AccessKeyID and SecretAccessKey are the credentials. Required.
	AccessKeyID, SecretAccessKey string
	// AllowAddress decides which addresses the store may be dialled at, checked on the address
	// actually connected to. Default outbound.PublicOnly, Natter's one outbound address policy,
	// so the store cannot be pointed into the deployment's own network.
	AllowAddress func(netip.Addr) bool
	// Timeout bounds the wait for response headers and for each read of a response body.
	// Default 30s.
	Timeout time.Duration
	// TempDir holds an upload while it is measured and hashed before it is sent. Default
	// os.TempDir().
	TempDir string
}

// S3 keeps objects in a bucket of an S3-compatible store. Its HTTP client uses no proxy,
// follows no redirects and dials only addresses AllowAddress admits; error text from the store
// is cut to 512 bytes.
type S3 struct {
	cfg    S3Config
	client *minio.Client
}

var _ Store = (*S3)(nil)

// maxErrorText bounds the store's diagnostic text kept in an error, in bytes.
const maxErrorText = 512

// NewS3 validates cfg and builds the store's client.
func NewS3(cfg S3Config) (*S3, error) {
	base, err := url.Parse(cfg.Endpoint)
	if err != nil || base.Host == "" || (base.Scheme != "https" && base.Scheme != "http") || base.User != nil || base.RawQuery != "" ||
		strings.Trim(base.Path, "/") != "" {
		return nil, errors.New("blob: the S3 endpoint must be an absolute http(s) URL without credentials, path or query")
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
		cfg.AllowAddress = outbound.PublicOnly
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	// Connections are kept between calls: the store is one configured host, not a destination a
	// user chose, and uploads come in bursts.
	transport := outbound.NewTransport(outbound.ClientConfig{Policy: cfg.AllowAddress, Timeout: cfg.Timeout, IdleConnsPerHost: 16})
	// One attempt per call: a caller that wants another tries again, and a slow or failing store
	// is not hammered on its behalf. minio-go follows no redirects.
	client, err := minio.New(base.Host, &minio.Options{Creds: credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		Secure: base.Scheme == "https", Region: cfg.Region, BucketLookup: minio.BucketLookupPath, Transport: transport, MaxRetries: 1})
	if err != nil {
		return nil, fmt.Errorf("blob: S3 client: %w", err)
	}
	return &S3{cfg: cfg, client: client}, nil
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
	// One PUT of the measured file (objects are at most the upload limit, far below S3's 5 GiB).
	_, err = s.client.PutObject(ctx, s.cfg.Bucket, key, f, n, minio.PutObjectOptions{
		ContentType: "application/octet-stream", DisableMultipart: true})
	if err != nil {
		return Info{}, storeError(err, "put", key)
	}
	return Info{Size: n, SHA256: sum}, nil
}

// Open implements Store. The object is read with ranged GETs as the caller reads and seeks.
func (s *S3) Open(ctx context.Context, key string) (Object, error) {
	if !ValidKey(key) {
		return Object{}, ErrInvalidKey
	}
	st, err := s.client.StatObject(ctx, s.cfg.Bucket, key, minio.StatObjectOptions{})
	if minio.ToErrorResponse(err).StatusCode == http.StatusNotFound {
		return Object{}, ErrNotFound
	}
	if err != nil {
		return Object{}, storeError(err, "head", key)
	}
	if st.Size < 0 {
		return Object{}, fmt.Errorf("blob: s3 head %s: no usable Content-Length", key)
	}
	return Object{ReadSeekCloser: &s3Reader{ctx: ctx, s: s, key: key, size: st.Size}, Size: st.Size}, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	if !ValidKey(key) {
		return ErrInvalidKey
	}
	err := s.client.RemoveObject(ctx, s.cfg.Bucket, key, minio.RemoveObjectOptions{})
	if err != nil && minio.ToErrorResponse(err).StatusCode != http.StatusNotFound {
		return storeError(err, "delete", key)
	}
	return nil
}

// storeError describes a failed call to the store, with at most 512 bytes of its text.
func storeError(err error, op, key string) error {
	resp := minio.ToErrorResponse(err)
	if resp.StatusCode == 0 {
		return fmt.Errorf("blob: s3 %s %s: %w", op, key, err)
	}
	text := resp.Message
	if len(text) > maxErrorText {
		text = text[:maxErrorText]
	}
	return fmt.Errorf("blob: s3 %s %s: status %d: %s", op, key, resp.StatusCode, strings.ToValidUTF8(text, ""))
}

// timedReader cancels its request when one read takes longer than timeout.
type timedReader struct {
	body    io.ReadCloser
	timeout time.Duration
	cancel  context.CancelFunc
}

func (b *timedReader) Read(p []byte) (int, error) {
	t := time.AfterFunc(b.timeout, b.cancel)
	n, err := b.body.Read(p)
	if !t.Stop() && err != nil {
		err = fmt.Errorf("blob: s3 read took longer than %s: %w", b.timeout, err)
	}
	return n, err
}

func (b *timedReader) Close() error {
	err := b.body.Close()
	b.cancel()
	return err
}

// s3Reader reads an object from its current offset with a ranged GET (minio-go's), opened on the
// first read after a seek. It keeps the context of the request it serves, like an HTTP request body.
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
		opts := minio.GetObjectOptions{}
		if r.off > 0 {
			if err := opts.SetRange(r.off, 0); err != nil {
				return 0, err
			}
		}
		ctx, cancel := context.WithCancel(r.ctx)
		obj, err := r.s.client.GetObject(ctx, r.s.cfg.Bucket, r.key, opts)
		if err != nil {
			cancel()
			return 0, storeError(err, "get", r.key)
		}
		r.body = &timedReader{body: obj, timeout: r.s.cfg.Timeout, cancel: cancel}
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
