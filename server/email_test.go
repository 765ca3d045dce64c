package server_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/outbound/email"
	"github.com/natterchat/natter/outbound/email/emailtest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server"
)

const mailPublicURL = "https://chat.example.com"

// mailHarness is a harness whose server emails through a real SMTP server on loopback.
func mailHarness(t *testing.T) (*servertest.Harness, *emailtest.Server) {
	t.Helper()
	relay := emailtest.New(t, emailtest.Options{Mode: emailtest.StartTLS, User: "natter", Password: "relay-pass"})
	sender, err := email.New(email.Config{URL: relay.URL(), From: "Natter <chat@example.com>", RootCAs: relay.RootCAs(), Timeout: 5 * time.Second})
	require.NoError(t, err)
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) {
		c.Mail, c.PublicURL = sender, mailPublicURL
	}))
	return h, relay
}

var linkToken = regexp.MustCompile(`https://chat\.example\.com/#(token|invite)=([A-Za-z0-9_%-]+)`)

// mailedToken is the token of the link of kind ("token" or "invite") in both parts of m.
func mailedToken(t *testing.T, m emailtest.Mail, kind string) string {
	t.Helper()
	got := linkToken.FindStringSubmatch(m.Text)
	require.NotNil(t, got, "no link in %q", m.Text)
	require.Equal(t, kind, got[1])
	require.Contains(t, m.HTML, got[0], "the HTML part carries the same link")
	token, err := url.QueryUnescape(got[2])
	require.NoError(t, err)
	return token
}

func TestMagicLinkByEmail(t *testing.T) {
	t.Parallel()
	h, relay := mailHarness(t)
	known := persisttest.User(t, h.Store, &persisttest.UserOpts{Email: persisttest.Ptr("Nia@Example.com")})

	// Unknown first: the same answer, nothing sent (the known address's email is the only one).
	unknown := h.Post(t, "/api/auth/magic/request", "", map[string]any{"email": "nobody@example.com"})
	unknown.RequireStatus(t, http.StatusAccepted)
	r := h.Post(t, "/api/auth/magic/request", "", map[string]any{"email": " NIA@example.com "})
	r.RequireStatus(t, http.StatusAccepted)
	require.Equal(t, unknown.Body, r.Body, "known and unknown addresses get the same answer")
	require.NotContains(t, string(r.Body), persist.PrefixMagicLinkToken)

	m := relay.Wait(t, 1, 5*time.Second)[0]
	require.Equal(t, []string{"nia@example.com"}, m.To)
	require.Equal(t, "chat@example.com", m.From)
	token := mailedToken(t, m, "token")
	require.True(t, strings.HasPrefix(token, persist.PrefixMagicLinkToken))

	signed := h.Post(t, "/api/auth/magic/consume", "", map[string]any{"token": token})
	signed.RequireStatus(t, http.StatusOK)
	require.Equal(t, known.ID, signed.JSON(t)["user"].(map[string]any)["id"])
	h.Post(t, "/api/auth/magic/consume", "", map[string]any{"token": token}).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	require.Len(t, relay.Mails(), 1)

	h.Post(t, "/api/auth/magic/request", "", map[string]any{"email": "not an address"}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
}

func TestMagicLinkEmailBudgets(t *testing.T) {
	t.Parallel()
	h, relay := mailHarness(t)
	persisttest.User(t, h.Store, &persisttest.UserOpts{Email: persisttest.Ptr("ola@example.com")})
	// Per address: five links an hour; the sixth request is answered the same and sends nothing.
	for range 6 {
		h.Post(t, "/api/auth/magic/request", "", map[string]any{"email": "ola@example.com"}).RequireStatus(t, http.StatusAccepted)
	}
	relay.Wait(t, 5, 5*time.Second)
	// Per source: twenty requests in ten minutes, whatever the addresses; the 21st is refused.
	for i := range 14 {
		h.Post(t, "/api/auth/magic/request", "", map[string]any{"email": "someone" + string(rune('a'+i)) + "@example.com"}).
			RequireStatus(t, http.StatusAccepted)
	}
	r := h.Post(t, "/api/auth/magic/request", "", map[string]any{"email": "late@example.com"})
	r.RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	time.Sleep(200 * time.Millisecond) // nothing more may arrive
	require.Len(t, relay.Mails(), 5)
}

func TestInviteByEmail(t *testing.T) {
	t.Parallel()
	h, relay := mailHarness(t)
	owner := h.NewUser(t)
	ws := persisttest.Workspace(t, h.Store, owner.User.ID)

	r := h.Post(t, "/api/workspaces/"+ws.ID+"/invites", owner.Token, map[string]any{"role": "member",
		"emails": []string{"new@example.com", "New@Example.com", "two@example.com"}})
	r.RequireStatus(t, http.StatusCreated)
	invites := r.JSON(t)["invites"].([]any)
	require.Len(t, invites, 2, "a repeated address counts once")
	for _, inv := range invites {
		e := inv.(map[string]any)
		require.Equal(t, true, e["sent"])
		require.Nil(t, e["token"], "the token is in the email only")
	}
	mails := relay.Wait(t, 2, 5*time.Second)
	var toNew emailtest.Mail
	for _, m := range mails {
		if m.To[0] == "new@example.com" {
			toNew = m
		}
	}
	require.Contains(t, toNew.Text, ws.Name)
	invite := mailedToken(t, toNew, "invite")

	// Someone invited without an account may have a sign-in link emailed, then accept.
	h.Post(t, "/api/auth/magic/request", "", map[string]any{"email": "new@example.com"}).RequireStatus(t, http.StatusAccepted)
	link := relay.Wait(t, 3, 5*time.Second)[2]
	signed := h.Post(t, "/api/auth/magic/consume", "", map[string]any{"token": mailedToken(t, link, "token")})
	signed.RequireStatus(t, http.StatusOK)
	session := signed.JSON(t)["token"].(string)
	h.Post(t, "/api/invites/accept", session, map[string]any{"token": invite}).RequireStatus(t, http.StatusOK)

	// Bad addresses change nothing.
	h.Post(t, "/api/workspaces/"+ws.ID+"/invites", owner.Token, map[string]any{"emails": []string{"ok@example.com", "nope"}}).
		RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	list := h.Get(t, "/api/workspaces/"+ws.ID+"/invites", owner.Token)
	require.Len(t, list.JSON(t)["invites"].([]any), 1, "only two@example.com's invite is open")
}

func TestInviteByEmailNeedsEmail(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	owner := h.NewUser(t)
	ws := persisttest.Workspace(t, h.Store, owner.User.ID)
	h.Post(t, "/api/workspaces/"+ws.ID+"/invites", owner.Token, map[string]any{"emails": []string{"new@example.com"}}).
		RequireError(t, http.StatusNotImplemented, persist.CodeNotImplemented)
}

func TestEmailSettings(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	me := h.NewUser(t)
	got := h.Get(t, "/api/me", me.Token).JSON(t)["user"].(map[string]any)["notification_settings"].(map[string]any)
	require.Equal(t, true, got["email_enabled"])
	require.Equal(t, "2m", got["email_delay"])
	r := h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: me.Token,
		Body: map[string]any{"notification_settings": map[string]any{"email_enabled": false, "email_delay": "1h"}}})
	r.RequireStatus(t, http.StatusOK)
	got = r.JSON(t)["user"].(map[string]any)["notification_settings"].(map[string]any)
	require.Equal(t, false, got["email_enabled"])
	require.Equal(t, "1h", got["email_delay"])
	h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: me.Token,
		Body: map[string]any{"notification_settings": map[string]any{"email_delay": "5m"}}}).
		RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	got = h.Get(t, "/api/me", me.Token).JSON(t)["user"].(map[string]any)["notification_settings"].(map[string]any)
	require.Equal(t, "1h", got["email_delay"])
}
