// Package pushtest is a fake push service for tests: a real TLS listener that receives Web
// Push requests, checks their VAPID signature, and decrypts their payloads (RFC 8291) with
// device keys made in the test. Only _test.go files import it.
package pushtest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/natterchat/natter/realtime/push"
)

// Answer is how the service answers one push.
type Answer struct {
	Status     int    // default 201
	RetryAfter string // Retry-After header, when set
	Location   string // Location header, for redirects
	// Hold, when set, keeps the request open until it is closed or the client gives up.
	Hold chan struct{}
}

// Received is one push the service accepted for decryption.
type Received struct {
	Path    string
	Payload push.Payload
	// VAPIDKey is the public key of the VAPID header (k=), whose signature of the JWT (t=) was
	// verified.
	VAPIDKey string
	// Err says what was wrong with the request (signature, encryption, JSON); nil when fine.
	Err error
}

// Service is a running fake push service.
type Service struct {
	URL string
	// RootCAs trusts the service's certificate: give it to the deliverer's Config.RootCAs.
	RootCAs  *x509.CertPool
	Received chan Received

	mu      sync.Mutex
	devices map[string]*Device // by path
	answer  func(path string) Answer
}

// New starts a service for t.
func New(t testing.TB) *Service {
	t.Helper()
	s := &Service{Received: make(chan Received, 256), devices: map[string]*Device{}}
	srv := httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	s.RootCAs = x509.NewCertPool()
	s.RootCAs.AddCert(srv.Certificate())
	return s
}

// Answer sets how the service answers from now on (nil: 201 for every push).
func (s *Service) Answer(fn func(path string) Answer) {
	s.mu.Lock()
	s.answer = fn
	s.mu.Unlock()
}

// Device is a browser's subscription at the service, with the private key that decrypts its
// pushes.
type Device struct {
	Endpoint string
	P256dh   string // unpadded base64url
	Auth     string // unpadded base64url
	// Digest is the unpadded base64url SHA-256 of Endpoint (GET /api/me/push?device=).
	Digest string
	path   string
	priv   *ecdh.PrivateKey
	secret []byte
}

// NewDevice makes a subscription at the service.
func (s *Service) NewDevice(t testing.TB) *Device {
	t.Helper()
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("device key: %v", err)
	}
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	d := &Device{path: "/push/" + base64.RawURLEncoding.EncodeToString(id), priv: priv, secret: secret,
		P256dh: base64.RawURLEncoding.EncodeToString(priv.PublicKey().Bytes()),
		Auth:   base64.RawURLEncoding.EncodeToString(secret)}
	d.Endpoint = s.URL + d.path
	sum := sha256.Sum256([]byte(d.Endpoint))
	d.Digest = base64.RawURLEncoding.EncodeToString(sum[:])
	s.mu.Lock()
	s.devices[d.path] = d
	s.mu.Unlock()
	return d
}

// Subscription is the device as PushSubscription.toJSON() gives it.
func (d *Device) Subscription() map[string]any {
	return map[string]any{"endpoint": d.Endpoint, "keys": map[string]any{"p256dh": d.P256dh, "auth": d.Auth}}
}

// Next waits for the next push, failing the test after 10 seconds.
func (s *Service) Next(t testing.TB) Received {
	t.Helper()
	select {
	case r := <-s.Received:
		if r.Err != nil {
			t.Fatalf("push to %s: %v", r.Path, r.Err)
		}
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("no push arrived")
		return Received{}
	}
}

func (s *Service) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	d := s.devices[r.URL.Path]
	answer := s.answer
	s.mu.Unlock()
	a := Answer{Status: http.StatusCreated}
	if answer != nil {
		a = answer(r.URL.Path)
		if a.Status == 0 {
			a.Status = http.StatusCreated
		}
	}
	if a.Hold != nil {
		select {
		case <-a.Hold:
		case <-r.Context().Done():
			return
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8192))
	rec := Received{Path: r.URL.Path}
	switch {
	case err != nil:
		rec.Err = err
	case d == nil:
		rec.Err = errors.New("no such device")
	default:
		rec.VAPIDKey, rec.Err = verifyVAPID(r.Header.Get("Authorization"), "https://"+r.Host)
		if rec.Err == nil {
			rec.Err = checkHeaders(r.Header)
		}
		if rec.Err == nil {
			var plain []byte
			if plain, rec.Err = d.decrypt(body); rec.Err == nil {
				if len(plain) >= push.MaxPayload {
					rec.Err = fmt.Errorf("payload of %d bytes", len(plain))
				} else {
					rec.Err = json.Unmarshal(plain, &rec.Payload)
				}
			}
		}
	}
	if a.Status < 300 {
		s.Received <- rec
	}
	if a.RetryAfter != "" {
		w.Header().Set("Retry-After", a.RetryAfter)
	}
	if a.Location != "" {
		w.Header().Set("Location", a.Location)
	}
	w.WriteHeader(a.Status)
}

func checkHeaders(h http.Header) error {
	if h.Get("Content-Encoding") != "aes128gcm" || h.Get("TTL") == "" {
		return fmt.Errorf("Content-Encoding %q, TTL %q", h.Get("Content-Encoding"), h.Get("TTL"))
	}
	return nil
}

// verifyVAPID checks an RFC 8292 header, "vapid t=<jwt>, k=<key>": the ES256 signature of the
// JWT by k, its audience and expiry. It returns k.
func verifyVAPID(header, audience string) (string, error) {
	rest, ok := strings.CutPrefix(header, "vapid ")
	if !ok {
		return "", fmt.Errorf("authorization %q is not vapid", header)
	}
	var token, key string
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			token = v
		case "k":
			key = v
		}
	}
	raw, err := base64.RawURLEncoding.DecodeString(key)
	if err != nil {
		return "", fmt.Errorf("vapid k: %w", err)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		return "", fmt.Errorf("vapid k: %w", err)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", errors.New("vapid t is not a JWT")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return "", errors.New("vapid signature is not ES256")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return "", errors.New("vapid signature does not verify")
	}
	claimsRaw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", err
	}
	var claims struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}
	if err := json.Unmarshal(claimsRaw, &claims); err != nil {
		return "", err
	}
	if claims.Aud != audience || claims.Exp < time.Now().Unix() || claims.Sub == "" {
		return "", fmt.Errorf("vapid claims %+v (audience %s)", claims, audience)
	}
	return key, nil
}

// decrypt opens an aes128gcm body (RFC 8188) encrypted for the device (RFC 8291).
func (d *Device) decrypt(body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("body too short")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idlen || rs < 18 {
		return nil, errors.New("bad header")
	}
	senderRaw, ciphertext := body[21:21+idlen], body[21+idlen:]
	sender, err := ecdh.P256().NewPublicKey(senderRaw)
	if err != nil {
		return nil, fmt.Errorf("sender key: %w", err)
	}
	shared, err := d.priv.ECDH(sender)
	if err != nil {
		return nil, err
	}
	info := append(append([]byte("WebPush: info\x00"), d.priv.PublicKey().Bytes()...), senderRaw...)
	ikm, err := hkdf.Key(sha256.New, shared, d.secret, string(info), 32)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if len(ciphertext) > int(rs) {
		return nil, errors.New("more than one record")
	}
	plain, err := gcm.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		return nil, fmt.Errorf("decrypt: %w", err)
	}
	plain = bytes.TrimRight(plain, "\x00")
	if len(plain) == 0 || plain[len(plain)-1] != 0x02 {
		return nil, errors.New("no last-record delimiter")
	}
	return plain[:len(plain)-1], nil
}
