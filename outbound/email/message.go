package email

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
	"time"
)

// Message is one email to one recipient.
type Message struct {
	// To is the recipient's address. Required.
	To string
	// Subject is encoded as RFC 2047 words when it is not plain ASCII. Required.
	Subject string
	// Text is the plain-text part. Required.
	Text string
	// HTML, when set, is the HTML alternative of Text.
	HTML string
	// Unsubscribe, when set, is the one-click unsubscribe URL (RFC 8058): it is given as
	// List-Unsubscribe with List-Unsubscribe-Post: List-Unsubscribe=One-Click.
	Unsubscribe string
	// Automatic marks mail sent without a person asking for it (notifications):
	// Auto-Submitted: auto-generated (RFC 3834), so that vacation responders stay quiet.
	Automatic bool
	// MessageID, when set, is the Message-ID's left part, so that the same mail submitted
	// twice can be recognised; default random.
	MessageID string
}

// render writes the message in RFC 5322 form with CRLF line ends.
func (m Message) render(from *mail.Address, now time.Time) ([]byte, error) {
	to, err := mail.ParseAddress(m.To)
	if err != nil || strings.ContainsAny(m.To, "\r\n") {
		return nil, errors.New("the recipient is not an email address")
	}
	if strings.TrimSpace(m.Subject) == "" || m.Text == "" {
		return nil, errors.New("an email needs a subject and a text")
	}
	if strings.ContainsAny(m.Unsubscribe, "\r\n<> ") || strings.ContainsAny(m.MessageID, "\r\n<>@ ") {
		return nil, errors.New("the unsubscribe URL or message id holds characters a header cannot")
	}
	id := m.MessageID
	if id == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		id = hex.EncodeToString(b)
	}
	domain := from.Address[strings.LastIndexByte(from.Address, '@')+1:]
	var buf bytes.Buffer
	h := func(k, v string) { fmt.Fprintf(&buf, "%s: %s\r\n", k, v) }
	h("From", from.String())
	h("To", to.String())
	h("Subject", mime.QEncoding.Encode("utf-8", oneLine(m.Subject)))
	h("Date", now.UTC().Format(time.RFC1123Z))
	h("Message-ID", "<"+id+"@"+domain+">")
	h("MIME-Version", "1.0")
	if m.Automatic {
		h("Auto-Submitted", "auto-generated")
	}
	if m.Unsubscribe != "" {
		h("List-Unsubscribe", "<"+m.Unsubscribe+">")
		h("List-Unsubscribe-Post", "List-Unsubscribe=One-Click")
	}
	if m.HTML == "" {
		h("Content-Type", "text/plain; charset=utf-8")
		h("Content-Transfer-Encoding", "quoted-printable")
		buf.WriteString("\r\n")
		if err := writeQP(&buf, m.Text); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	mw := multipart.NewWriter(&buf)
	h("Content-Type", "multipart/alternative; boundary="+mw.Boundary())
	buf.WriteString("\r\n")
	for _, part := range []struct{ kind, body string }{{"text/plain", m.Text}, {"text/html", m.HTML}} {
		pw, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.kind + "; charset=utf-8"},
			"Content-Transfer-Encoding": {"quoted-printable"}})
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		if err := writeQP(&b, part.body); err != nil {
			return nil, err
		}
		if _, err := pw.Write(b.Bytes()); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeQP writes text quoted-printable with CRLF line ends.
func writeQP(buf *bytes.Buffer, text string) error {
	w := quotedprintable.NewWriter(buf)
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r\n")
	if _, err := w.Write([]byte(text)); err != nil {
		return err
	}
	return w.Close()
}

// oneLine folds a header value's line breaks into spaces: a subject built from user text must
// not start a header of its own.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
