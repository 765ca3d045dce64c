package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Sender submits messages to the configured relay, one connection per message: mail is rare
// (sign-in links, invitations, batched notifications), and a fresh connection never meets a
// relay's idle timeout.
type Sender struct {
	ep      endpoint
	from    *mail.Address
	timeout time.Duration
	roots   *tlsRoots
}

type tlsRoots struct{ cfg *tls.Config }

// New validates cfg. It does not connect.
func New(cfg Config) (*Sender, error) {
	ep, err := parseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("--smtp-url %w", err)
	}
	if cfg.Password != "" {
		if ep.user == "" {
			return nil, errors.New("--smtp-password-file needs a user name in --smtp-url (smtp://user@host)")
		}
		ep.password, ep.hasSecret = cfg.Password, true
	}
	if ep.user != "" && ep.password == "" {
		return nil, errors.New("--smtp-url names a user but no password (put it in the URL or in --smtp-password-file)")
	}
	from, err := ParseFrom(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("--email-from %w", err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	return &Sender{ep: ep, from: from, timeout: cfg.Timeout,
		roots: &tlsRoots{cfg: &tls.Config{ServerName: ep.host, RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}}}, nil
}

// From is the configured sender.
func (s *Sender) From() *mail.Address { return s.from }

// Error is a relay's refusal. Temporary is true for a 4xx reply (try again later), false for a
// 5xx (do not).
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("the mail relay answered %d %s", e.Code, e.Message)
}

// Temporary reports whether the refusal is worth retrying.
func (e *Error) Temporary() bool { return e.Code >= 400 && e.Code < 500 }

// Permanent reports whether err is a refusal not worth retrying: a 5xx reply. Every other
// failure (a 4xx, no connection, a timeout, a TLS failure) may pass, and is temporary.
func Permanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && !e.Temporary()
}

// Send submits m and returns the relay's final reply to the message (its queue id, usually).
func (s *Sender) Send(ctx context.Context, m Message) (string, error) {
	body, err := m.render(s.from, time.Now())
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	c, err := s.dial(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	reply, err := s.submit(c, m.To, body)
	if err != nil && ctx.Err() != nil {
		return "", fmt.Errorf("the mail relay did not answer in time: %w", ctx.Err())
	}
	return reply, err
}

func (s *Sender) submit(c *smtp.Client, to string, body []byte) (string, error) {
	if s.ep.user != "" {
		if err := c.Auth(sasl.NewPlainClient("", s.ep.user, s.ep.password)); err != nil {
			return "", relayError(err)
		}
	}
	if err := c.Mail(s.from.Address, nil); err != nil {
		return "", relayError(err)
	}
	if err := c.Rcpt(to, nil); err != nil {
		return "", relayError(err)
	}
	w, err := c.Data()
	if err != nil {
		return "", relayError(err)
	}
	if _, err := w.Write(body); err != nil {
		return "", relayError(err)
	}
	resp, err := w.CloseWithResponse()
	if err != nil {
		return "", relayError(err)
	}
	_ = c.Quit()
	return "250 " + resp.StatusText, nil
}

// dial connects with the URL's protection; a relay reached without TLS must be on loopback.
func (s *Sender) dial(ctx context.Context) (*smtp.Client, error) {
	d := &net.Dialer{}
	conn, err := d.DialContext(ctx, "tcp", s.ep.addr)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the mail relay: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	switch s.ep.security {
	case plain:
		if a, ok := conn.RemoteAddr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
			_ = conn.Close()
			return nil, errors.New("tls=none is for a relay on loopback, and this one is not")
		}
	case implicitTLS:
		tc := tls.Client(conn, s.roots.cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("TLS with the mail relay failed: %w", err)
		}
		conn = tc
	}
	var c *smtp.Client
	if s.ep.security == startTLS {
		var err error
		if c, err = smtp.NewClientStartTLS(conn, s.roots.cfg); err != nil {
			_ = conn.Close()
			if se := relayError(err); se != err {
				return nil, se
			}
			return nil, fmt.Errorf("STARTTLS with the mail relay failed (smtp:// requires it; use smtps:// or, on loopback, ?tls=none): %w", err)
		}
	} else {
		c = smtp.NewClient(conn)
	}
	c.CommandTimeout, c.SubmissionTimeout = s.timeout, s.timeout
	return c, nil
}

// relayError turns a reply into an *Error; other failures pass as they are (temporary).
func relayError(err error) error {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return &Error{Code: se.Code, Message: se.Message}
	}
	return err
}

// Render returns m as it would be submitted, for tests and the admin command's preview.
func Render(from *mail.Address, m Message, now time.Time) ([]byte, error) {
	return m.render(from, now)
}
