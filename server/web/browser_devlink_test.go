package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/server"
)

// TestBrowserDevMagicLink: under natter dev a fresh browser is the development owner, but a
// magic link opened in it (/#token=…) signs in the link's person, not the owner.
func TestBrowserDevMagicLink(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *server.Config) { c.DevBootstrap = true })
	owner := e.person(t, "Olive Owner")
	ws := e.workspace(t, owner, "Acme")
	e.channel(t, owner, ws.ID, "general")
	var link struct {
		Token string `json:"token"`
	}
	e.api(t, owner, "POST", "/api/auth/magic/request", map[string]string{"email": "dana@example.com", "display_name": "Dana Link"}, &link)
	if link.Token == "" {
		t.Fatal("no development token")
	}

	b := newBrowser(t, e)
	// The fallback is real: a fresh browser without a link is the owner.
	plain := b.tab(t, person{})
	do(t, plain, "open the client", chromedp.Navigate(e.URL+"/"))
	waitFor(t, plain, "the owner by the development fallback", `document.querySelector('.me-name')?.textContent === 'Olive Owner'`)

	tab := b.tab(t, person{})
	do(t, tab, "open the link", chromedp.Navigate(e.URL+"/#token="+link.Token))
	waitAcrossLoad(t, tab, "the link's person", `document.querySelector('.me-name')?.textContent === 'Dana Link'`)
	if got := eval[string](t, tab, `location.hash`); got != "" {
		t.Errorf("the token stays in the address: %q", got)
	}
}
