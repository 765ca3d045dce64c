package email_test

import (
	"context"
	"mime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/outbound/email"
	"github.com/natterchat/natter/outbound/email/emailtest"
)

func sender(t *testing.T, srv *emailtest.Server, url string) *email.Sender {
	t.Helper()
	s, err := email.New(email.Config{URL: url, From: "Natter <chat@example.com>", RootCAs: srv.RootCAs(), Timeout: 5 * time.Second})
	require.NoError(t, err)
	return s
}

func TestSendEachWayOfConnecting(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]emailtest.Options{
		"starttls": {Mode: emailtest.StartTLS, User: "natter", Password: "s3cret"},
		"implicit": {Mode: emailtest.Implicit, User: "natter", Password: "s3cret"},
		"plain":    {Mode: emailtest.Plain},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := emailtest.New(t, opts)
			reply, err := sender(t, srv, srv.URL()).Send(context.Background(), email.Message{To: "nia@example.com",
				Subject: "Grüße\r\nBcc: evil@example.com", Text: "line one\nline two", HTML: "<p>line one</p>",
				Unsubscribe: "https://chat.example.com/api/email/unsubscribe?token=abc", Automatic: true})
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(reply, "250 "), reply)
			m := srv.Wait(t, 1, 5*time.Second)[0]
			require.Equal(t, "chat@example.com", m.From)
			require.Equal(t, []string{"nia@example.com"}, m.To)
			require.Equal(t, "line one\nline two", m.Text)
			require.Equal(t, "<p>line one</p>", m.HTML)
			require.Empty(t, m.Header.Get("Bcc"), "a subject's line break must not start a header")
			subject, err := new(mimeDecoder).DecodeHeader(m.Header.Get("Subject"))
			require.NoError(t, err)
			require.Equal(t, "Grüße Bcc: evil@example.com", subject)
			require.Equal(t, "<https://chat.example.com/api/email/unsubscribe?token=abc>", m.Header.Get("List-Unsubscribe"))
			require.Equal(t, "List-Unsubscribe=One-Click", m.Header.Get("List-Unsubscribe-Post"))
			require.Equal(t, "auto-generated", m.Header.Get("Auto-Submitted"))
		})
	}
}

func TestSendRefusals(t *testing.T) {
	t.Parallel()
	srv := emailtest.New(t, emailtest.Options{Mode: emailtest.StartTLS})
	s := sender(t, srv, srv.URL())
	srv.Refuse(451, 550)
	msg := email.Message{To: "nia@example.com", Subject: "hi", Text: "hi"}
	_, err := s.Send(context.Background(), msg)
	var e *email.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, 451, e.Code)
	require.True(t, e.Temporary())
	require.False(t, email.Permanent(err))
	_, err = s.Send(context.Background(), msg)
	require.ErrorAs(t, err, &e)
	require.Equal(t, 550, e.Code)
	require.True(t, email.Permanent(err))
	require.Empty(t, srv.Mails())
	require.Equal(t, 2, srv.Attempts())
}

func TestSendWrongPasswordIsPermanent(t *testing.T) {
	t.Parallel()
	srv := emailtest.New(t, emailtest.Options{Mode: emailtest.StartTLS, User: "natter", Password: "right"})
	url := strings.Replace(srv.URL(), ":right@", ":wrong@", 1)
	_, err := sender(t, srv, url).Send(context.Background(), email.Message{To: "nia@example.com", Subject: "hi", Text: "hi"})
	require.True(t, email.Permanent(err), "%v", err)
	// The password file replaces the URL's password.
	s, err := email.New(email.Config{URL: url, Password: "right", From: "chat@example.com", RootCAs: srv.RootCAs()})
	require.NoError(t, err)
	_, err = s.Send(context.Background(), email.Message{To: "nia@example.com", Subject: "hi", Text: "hi"})
	require.NoError(t, err)
}

func TestStartTLSIsRequired(t *testing.T) {
	t.Parallel()
	srv := emailtest.New(t, emailtest.Options{Mode: emailtest.Plain})
	url := strings.TrimSuffix(srv.URL(), "?tls=none")
	_, err := sender(t, srv, url).Send(context.Background(), email.Message{To: "nia@example.com", Subject: "hi", Text: "hi"})
	require.ErrorContains(t, err, "STARTTLS")
	require.Empty(t, srv.Mails())
	require.Zero(t, srv.Attempts())
}

func TestConfigRefusals(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"http://mail.example.com":                   "must start with smtp://",
		"smtp://":                                   "must name the relay's host",
		"smtp://mail.example.com?tls=none":          "loopback",
		"smtps://127.0.0.1?tls=none":                "only with smtp://",
		"smtp://mail.example.com?tls=maybe":         "tls=none only",
		"smtp://mail.example.com?auth=login":        "unknown parameter",
		"smtp://mail.example.com/path":              "path",
		"smtp://user@mail.example.com":              "no password",
		"smtp://user:pw@mail.example.com:587#frag":  "fragment",
		"smtp://user:pw@mail.example.com:587 extra": "URL",
	} {
		_, err := email.New(email.Config{URL: url, From: "chat@example.com"})
		require.ErrorContains(t, err, want, url)
		if err != nil {
			require.NotContains(t, err.Error(), "pw@", "an error must not echo the password")
		}
	}
	_, err := email.New(email.Config{URL: "smtp://localhost:2525?tls=none", From: "not an address"})
	require.ErrorContains(t, err, "--email-from")
	_, err = email.New(email.Config{URL: "smtp://mail.example.com", Password: "pw", From: "chat@example.com"})
	require.ErrorContains(t, err, "user name")
	for _, ok := range []string{"smtp://[::1]:25?tls=none", "smtps://u:p@mail.example.com", "smtp://mail.example.com:2525"} {
		_, err := email.New(email.Config{URL: ok, From: "chat@example.com"})
		require.NoError(t, err, ok)
	}
}

func TestMessageRefusesHeaderInjection(t *testing.T) {
	t.Parallel()
	srv := emailtest.New(t, emailtest.Options{Mode: emailtest.Plain})
	s := sender(t, srv, srv.URL())
	for _, m := range []email.Message{
		{To: "nia@example.com\r\nBcc: x@example.com", Subject: "hi", Text: "hi"},
		{To: "nia@example.com", Subject: "hi", Text: "hi", Unsubscribe: "https://x>\r\nBcc: y@example.com"},
		{To: "nia@example.com", Subject: " ", Text: "hi"},
	} {
		_, err := s.Send(context.Background(), m)
		require.Error(t, err)
	}
	require.Zero(t, srv.Attempts())
}

type mimeDecoder = mime.WordDecoder
