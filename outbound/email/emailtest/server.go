// Package emailtest is a real SMTP server on loopback for tests (github.com/emersion/go-smtp):
// STARTTLS with a certificate of its own, implicit TLS or no TLS; optional PLAIN
// authentication; refusals on demand; it keeps what it accepted, parsed. Only _test.go files
// import it.
package emailtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Mode is how the server protects connections.
type Mode int

const (
	StartTLS Mode = iota // smtp:// with STARTTLS offered
	Implicit             // smtps://
	Plain                // smtp://…?tls=none, no TLS offered
)

// Options configure the server.
type Options struct {
	Mode Mode
	// User and Password, when set, require PLAIN authentication with them.
	User, Password string
}

// Mail is one accepted message.
type Mail struct {
	From   string
	To     []string
	Raw    []byte
	Header mail.Header
	// Text and HTML are the decoded plain-text and HTML parts.
	Text, HTML string
}

// Server is a running SMTP server.
type Server struct {
	opts  Options
	addr  string
	roots *x509.CertPool

	mu       sync.Mutex
	mails    []Mail
	refusals []int // reply codes for the next DATA commands, in order
	attempts int   // DATA commands received
	arrived  chan struct{}
}

// New starts a server on 127.0.0.1 for the test's duration.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	cert, roots := selfSigned(t)
	s := &Server{opts: opts, roots: roots, arrived: make(chan struct{}, 1024)}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{s: s}, nil }))
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	srv.AllowInsecureAuth = opts.Mode == Plain
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("emailtest: %v", err)
	}
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	switch opts.Mode {
	case StartTLS:
		srv.TLSConfig = tlsCfg
	case Implicit:
		ln = tls.NewListener(ln, tlsCfg)
	}
	s.addr = ln.Addr().String()
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	// The listener is closed here too: Close before Serve has registered it would not.
	t.Cleanup(func() { _ = srv.Close(); _ = ln.Close(); <-done })
	return s
}

// URL is the --smtp-url of the server, with the credentials of its options.
func (s *Server) URL() string {
	scheme, query := "smtp://", ""
	switch s.opts.Mode {
	case Implicit:
		scheme = "smtps://"
	case Plain:
		query = "?tls=none"
	}
	cred := ""
	if s.opts.User != "" {
		cred = s.opts.User + ":" + s.opts.Password + "@"
	}
	return scheme + cred + s.addr + query
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// RootCAs trusts the server's certificate.
func (s *Server) RootCAs() *x509.CertPool { return s.roots }

// Refuse makes the next DATA commands fail with these reply codes, one each, in order (421 or
// 451 are temporary, 550 or 554 permanent).
func (s *Server) Refuse(codes ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refusals = append(s.refusals, codes...)
}

// Attempts is how many messages were submitted, refused ones included.
func (s *Server) Attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// Mails returns the messages accepted so far.
func (s *Server) Mails() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.mails...)
}

// Wait waits until n messages have been accepted and returns them; it fails the test after
// timeout.
func (s *Server) Wait(t testing.TB, n int, timeout time.Duration) []Mail {
	t.Helper()
	deadline := time.After(timeout)
	for {
		if m := s.Mails(); len(m) >= n {
			return m
		}
		select {
		case <-s.arrived:
		case <-deadline:
			t.Fatalf("emailtest: %d messages accepted, want %d", len(s.Mails()), n)
			return nil
		}
	}
}

type session struct {
	s      *Server
	authed bool
	from   string
	to     []string
}

func (ss *session) AuthMechanisms() []string {
	if ss.s.opts.User == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != ss.s.opts.User || pass != ss.s.opts.Password {
			return smtp.ErrAuthFailed
		}
		ss.authed = true
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.opts.User != "" && !ss.authed {
		return smtp.ErrAuthRequired
	}
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s := ss.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if len(s.refusals) > 0 {
		code := s.refusals[0]
		s.refusals = s.refusals[1:]
		return &smtp.SMTPError{Code: code, EnhancedCode: smtp.EnhancedCodeNotSet, Message: "refused by the test"}
	}
	m, err := parse(raw)
	if err != nil {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCodeNotSet, Message: "unreadable: " + err.Error()}
	}
	m.From, m.To = ss.from, append([]string(nil), ss.to...)
	s.mails = append(s.mails, m)
	select {
	case s.arrived <- struct{}{}:
	default:
	}
	return nil
}

func (ss *session) Reset()        { ss.from, ss.to = "", nil }
func (ss *session) Logout() error { return nil }

// parse reads a message's headers and its text and HTML parts.
func parse(raw []byte) (Mail, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return Mail{}, err
	}
	m := Mail{Raw: raw, Header: msg.Header}
	kind, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return Mail{}, err
	}
	if !strings.HasPrefix(kind, "multipart/") {
		m.Text, err = decode(msg.Body, msg.Header.Get("Content-Transfer-Encoding"))
		return m, err
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		if err != nil {
			return Mail{}, err
		}
		body, err := decode(p, p.Header.Get("Content-Transfer-Encoding"))
		if err != nil {
			return Mail{}, err
		}
		if strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") {
			m.HTML = body
		} else {
			m.Text = body
		}
	}
}

func decode(r io.Reader, encoding string) (string, error) {
	if strings.EqualFold(encoding, "quoted-printable") {
		r = quotedprintable.NewReader(r)
	}
	b, err := io.ReadAll(r)
	return strings.ReplaceAll(string(b), "\r\n", "\n"), err
}

// selfSigned makes a certificate for 127.0.0.1 and localhost and a pool that trusts it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("emailtest: %v", err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "emailtest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("emailtest: %v", err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("emailtest: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}
