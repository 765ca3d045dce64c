package admin_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin"
	"github.com/natterchat/natter/outbound/email/emailtest"
)

func TestAdminEmailTest(t *testing.T) {
	t.Parallel()
	relay := emailtest.New(t, emailtest.Options{Mode: emailtest.Plain, User: "natter", Password: "from-file"})
	withoutPassword := strings.Replace(relay.URL(), ":from-file@", "@", 1)
	file := filepath.Join(t.TempDir(), "smtp-password")
	require.NoError(t, os.WriteFile(file, []byte("from-file\n"), 0o600))

	out, err := run(t, "admin", "email", "test", "--smtp-url", withoutPassword, "--smtp-password-file", file,
		"--email-from", "Natter <chat@example.com>", "--to", "ops@example.com")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(out, "sent to ops@example.com; the relay answered: 250 "), out)
	m := relay.Wait(t, 1, 5*time.Second)[0]
	require.Equal(t, []string{"ops@example.com"}, m.To)
	require.Equal(t, "Natter test email", m.Header.Get("Subject"))

	// The relay's refusal is reported with its code.
	relay.Refuse(550)
	_, err = run(t, "admin", "email", "test", "--smtp-url", relay.URL(), "--email-from", "chat@example.com", "--to", "ops@example.com")
	require.ErrorContains(t, err, "550")
}

func TestEmailConfiguration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		flag string
	}{
		{"NoFrom", []string{"dev", "--smtp-url", "smtp://localhost:2525?tls=none"}, "--email-from"},
		{"NoPublicURL", []string{"dev", "--smtp-url", "smtp://localhost:2525?tls=none", "--email-from", "chat@example.com"}, "--public-url"},
		{"PlainNotLoopback", []string{"dev", "--smtp-url", "smtp://u:pw@mail.example.com?tls=none", "--email-from", "chat@example.com",
			"--public-url", "https://chat.example.com"}, "--smtp-url"},
		{"FromWithoutURL", []string{"dev", "--email-from", "chat@example.com"}, "--email-from"},
		{"MissingPasswordFile", []string{"dev", "--smtp-url", "smtp://u@mail.example.com", "--smtp-password-file", "/nonexistent/pw",
			"--email-from", "chat@example.com", "--public-url", "https://chat.example.com"}, "--smtp-password-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := run(t, tc.args...)
			require.Error(t, err)
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, "dev: invalid configuration: "+tc.flag), msg)
			require.True(t, admin.IsUsageError(err))
			require.NotContains(t, msg, "pw@", "a password in a URL is never repeated")
		})
	}
}
