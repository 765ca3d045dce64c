package blob_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/server/blob"
)

// fakeS3 is an in-memory bucket answering path-style PUT, HEAD, GET (with a Range from an
// offset) and DELETE, refusing unsigned requests.
type fakeS3 struct {
	mu      sync.Mutex
	objects map[string][]byte
	calls   int
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AK/") || r.Header.Get("X-Amz-Date") == "" {
		http.Error(w, "unsigned", http.StatusForbidden)
		return
	}
	key, ok := strings.CutPrefix(r.URL.Path, "/bucket/")
	if !ok {
		http.Error(w, "no such bucket", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodPut:
		b, _ := io.ReadAll(r.Body)
		if strings.HasPrefix(r.Header.Get("X-Amz-Content-Sha256"), "STREAMING-") {
			b = decodeAWSChunked(b)
		}
		f.objects[key] = b
	case http.MethodHead, http.MethodGet:
		b, ok := f.objects[key]
		if !ok {
			http.Error(w, "NoSuchKey", http.StatusNotFound)
			return
		}
		w.Header().Set("Last-Modified", "Thu, 26 Nov 2026 06:00:00 GMT")
		w.Header().Set("ETag", fmt.Sprintf(`"%x"`, md5.Sum(b)))
		if rg := r.Header.Get("Range"); rg != "" {
			from, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
			w.Header().Set("Content-Length", strconv.Itoa(len(b)-from))
			w.WriteHeader(http.StatusPartialContent)
			_, _ = w.Write(b[from:])
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		if r.Method == http.MethodGet {
			_, _ = w.Write(b)
		}
	case http.MethodDelete:
		delete(f.objects, key)
		w.WriteHeader(http.StatusNoContent)
	}
}

// decodeAWSChunked reads the aws-chunked body of a streaming SigV4 upload, as S3 does:
// "<hex size>;chunk-signature=<sig>\r\n<data>\r\n" until a chunk of size 0.
func decodeAWSChunked(b []byte) []byte {
	var out []byte
	for {
		line, rest, ok := bytes.Cut(b, []byte("\r\n"))
		if !ok {
			return out
		}
		sizeText, _, _ := strings.Cut(string(line), ";")
		size, err := strconv.ParseInt(sizeText, 16, 64)
		if err != nil || size == 0 || int64(len(rest)) < size {
			return out
		}
		out = append(out, rest[:size]...)
		b = bytes.TrimPrefix(rest[size:], []byte("\r\n"))
	}
}

func anyAddress(netip.Addr) bool { return true }

func newS3(t *testing.T, h http.Handler, edit func(*blob.S3Config)) *blob.S3 {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cfg := blob.S3Config{Endpoint: srv.URL, Bucket: "bucket", AccessKeyID: "AK", SecretAccessKey: "SK",
		AllowAddress: anyAddress, TempDir: t.TempDir()}
	if edit != nil {
		edit(&cfg)
	}
	s, err := blob.NewS3(cfg)
	require.NoError(t, err)
	return s
}

func TestS3(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("PutOpenSeekDelete", func(t *testing.T) {
		t.Parallel()
		fake := &fakeS3{objects: map[string][]byte{}}
		s := newS3(t, fake, nil)
		key := blob.NewKey()
		info, err := s.Put(ctx, key, strings.NewReader("hello, object"))
		require.NoError(t, err)
		require.Equal(t, int64(13), info.Size)
		require.Len(t, info.SHA256, 32)

		obj, err := s.Open(ctx, key)
		require.NoError(t, err)
		require.Equal(t, int64(13), obj.Size)
		end, err := obj.Seek(0, io.SeekEnd)
		require.NoError(t, err)
		require.Equal(t, int64(13), end)
		_, err = obj.Seek(7, io.SeekStart)
		require.NoError(t, err)
		rest, err := io.ReadAll(obj)
		require.NoError(t, err)
		require.Equal(t, "object", string(rest))
		_, err = obj.Seek(0, io.SeekStart)
		require.NoError(t, err)
		all, err := io.ReadAll(obj)
		require.NoError(t, err)
		require.Equal(t, "hello, object", string(all))
		require.NoError(t, obj.Close())

		require.NoError(t, s.Delete(ctx, key))
		_, err = s.Open(ctx, key)
		require.ErrorIs(t, err, blob.ErrNotFound)
		require.NoError(t, s.Delete(ctx, key), "a missing object is not an error")
		_, err = s.Put(ctx, "../x", strings.NewReader(""))
		require.ErrorIs(t, err, blob.ErrInvalidKey)
	})

	t.Run("PrivateAddressesRefusedByDefault", func(t *testing.T) {
		t.Parallel()
		fake := &fakeS3{objects: map[string][]byte{}}
		s := newS3(t, fake, func(c *blob.S3Config) { c.AllowAddress = nil })
		_, err := s.Put(ctx, blob.NewKey(), strings.NewReader("x"))
		require.ErrorIs(t, err, outbound.ErrRefused)
		fake.mu.Lock()
		defer fake.mu.Unlock()
		require.Zero(t, fake.calls, "nothing reached the loopback store")
	})

	t.Run("NoRedirects", func(t *testing.T) {
		t.Parallel()
		fake := &fakeS3{objects: map[string][]byte{}}
		elsewhere := httptest.NewServer(fake)
		t.Cleanup(elsewhere.Close)
		s := newS3(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
		}), nil)
		require.Error(t, s.Delete(ctx, blob.NewKey()))
		fake.mu.Lock()
		defer fake.mu.Unlock()
		require.Zero(t, fake.calls)
	})

	t.Run("ErrorTextIsCapped", func(t *testing.T) {
		t.Parallel()
		s := newS3(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write(bytes.Repeat([]byte("E"), 10000))
		}), nil)
		_, err := s.Put(ctx, blob.NewKey(), strings.NewReader("x"))
		require.Error(t, err)
		require.Equal(t, 512, strings.Count(err.Error(), "E"), err.Error()[:80])
	})

	t.Run("SlowStoresTimeOut", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		key := blob.NewKey()
		s := newS3(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Last-Modified", "Thu, 26 Nov 2026 06:00:00 GMT")
			w.Header().Set("ETag", `"e"`)
			if r.Method == http.MethodHead {
				w.Header().Set("Content-Length", "10")
				return
			}
			if r.Method == http.MethodGet {
				// Headers and a first byte, then nothing.
				w.Header().Set("Content-Length", "10")
				w.WriteHeader(http.StatusPartialContent)
				_, _ = w.Write([]byte("a"))
				w.(http.Flusher).Flush()
			}
			<-release
		}), func(c *blob.S3Config) { c.Timeout = 50 * time.Millisecond })
		t.Cleanup(func() { close(release) }) // before the server's Close, which waits for handlers
		require.Error(t, s.Delete(ctx, key), "no response headers in time")
		obj, err := s.Open(ctx, key)
		require.NoError(t, err)
		defer obj.Close()
		_, err = io.ReadAll(obj)
		require.Error(t, err, "a body read that does not return in time")
	})

	t.Run("Config", func(t *testing.T) {
		t.Parallel()
		for _, cfg := range []blob.S3Config{
			{Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s"},
			{Endpoint: "ftp://x", Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s"},
			{Endpoint: "https://user:pw@x", Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s"},
			{Endpoint: "https://x", AccessKeyID: "a", SecretAccessKey: "s"},
			{Endpoint: "https://x", Bucket: "b"},
			{Endpoint: "https://x/prefix", Bucket: "b", AccessKeyID: "a", SecretAccessKey: "s"},
		} {
			_, err := blob.NewS3(cfg)
			require.Error(t, err, fmt.Sprint(cfg.Endpoint, cfg.Bucket))
		}
	})
}
