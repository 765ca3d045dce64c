// Package email sends mail over SMTP to the relay the operator configured: submission with
// STARTTLS (required), implicit TLS, or plain SMTP to a relay on the loopback interface only. It
// imports nothing of the project, like the rest of outbound; emailtest is a real SMTP server for
// tests.
package email

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"strings"
	"time"
)

// Config configures a Sender.
type Config struct {
	// URL names the relay: smtp://[user[:password]@]host[:port] (STARTTLS required, port 587 by
	// default), smtps://… (implicit TLS, port 465 by default), or smtp://…?tls=none for a relay on
	// a loopback address (no TLS at all). Required.
	URL string
	// Password replaces the URL's password (the content of --smtp-password-file, trailing
	// newline already dropped). Default "".
	Password string
	// From is the sender: an address, optionally with a name ("Natter <chat@example.com>").
	// Required.
	From string
	// Timeout bounds one whole submission: connection, TLS, every command. Default 30s.
	Timeout time.Duration
	// RootCAs replaces the system's certificate roots for the relay. Default nil (system).
	RootCAs *x509.CertPool
}

// security is how a connection to the relay is protected.
type security int

const (
	startTLS security = iota
	implicitTLS
	plain // loopback only
)

// endpoint is a parsed --smtp-url.
type endpoint struct {
	addr      string // host:port
	host      string
	security  security
	user      string
	password  string
	hasSecret bool
}

// parseURL checks an --smtp-url and returns where and how to connect. Errors name what is
// wrong without echoing the URL, which may hold a password.
func parseURL(raw string) (endpoint, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return endpoint{}, errors.New("is not a URL (smtp://host:port or smtps://host:port)")
	}
	var e endpoint
	port := ""
	switch u.Scheme {
	case "smtp":
		e.security, port = startTLS, "587"
	case "smtps":
		e.security, port = implicitTLS, "465"
	default:
		return endpoint{}, errors.New("must start with smtp:// (STARTTLS) or smtps:// (implicit TLS)")
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return endpoint{}, errors.New("must name the relay's host, as in smtp://mail.example.com:587")
	}
	if (u.Path != "" && u.Path != "/") || u.Fragment != "" {
		return endpoint{}, errors.New("must not have a path or fragment")
	}
	e.host = u.Hostname()
	if p := u.Port(); p != "" {
		port = p
	}
	e.addr = net.JoinHostPort(e.host, port)
	if u.User != nil {
		e.user = u.User.Username()
		e.password, e.hasSecret = u.User.Password()
	}
	q := u.Query()
	for k := range q {
		if k != "tls" {
			return endpoint{}, fmt.Errorf("has an unknown parameter %q (only tls=none)", k)
		}
	}
	if v, ok := q["tls"]; ok {
		if len(v) != 1 || v[0] != "none" || u.Scheme != "smtp" {
			return endpoint{}, errors.New("takes tls=none only with smtp://")
		}
		if !loopbackName(e.host) {
			return endpoint{}, errors.New("may use tls=none only for a relay on a loopback address (localhost, 127.0.0.1, ::1)")
		}
		e.security = plain
	}
	return e, nil
}

// loopbackName reports whether host names the loopback interface: localhost or a loopback
// address literal. The connection's peer is checked again when it is made.
func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ParseFrom checks a sender address ("chat@example.com" or "Natter <chat@example.com>").
func ParseFrom(raw string) (*mail.Address, error) {
	a, err := mail.ParseAddress(strings.TrimSpace(raw))
	if err != nil || !strings.Contains(a.Address, "@") {
		return nil, errors.New("must be an address like chat@example.com or Natter <chat@example.com>")
	}
	return a, nil
}

// CheckURL validates an --smtp-url without connecting.
func CheckURL(raw string) error {
	_, err := parseURL(raw)
	return err
}
