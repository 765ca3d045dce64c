package web_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestBrowserAvatars: a person without a picture shows their initial, and the page asks no
// other host for one (a Gravatar request tells Gravatar who is looking at whom), unless the
// operator turned remote avatars on (server.Config.RemoteAvatars, checked in the server tests).
func TestBrowserAvatars(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ana := e.person(t, "Ana Lima")
	ws := e.workspace(t, ana, "Acme")
	ch := e.channel(t, ana, ws.ID, "general")
	e.api(t, ana, "POST", "/api/channels/"+ch.ID+"/messages", map[string]string{"body": "Hello with my face", "nonce": "avatar-1"}, nil)

	b := newBrowser(t, e)
	tab := b.tab(t, ana)
	var mu sync.Mutex
	var foreign []string
	if err := chromedp.Listen(tab, func(ev any) {
		if r, ok := ev.(*network.EventRequestWillBeSent); ok && !strings.HasPrefix(r.Request.URL, e.URL) &&
			!strings.HasPrefix(r.Request.URL, "data:") && !strings.HasPrefix(r.Request.URL, "blob:") {
			mu.Lock()
			foreign = append(foreign, r.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("listen: %v", err)
	}
	if _, err := chromedp.Call(tab, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("enable the network domain: %v", err)
	}
	do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
	waitFor(t, tab, "the message", hasBody("Hello with my face"))
	// The message's author avatar is Ana's initial, not an image from elsewhere.
	waitFor(t, tab, "Ana's initial beside her message", `[...document.querySelectorAll('.list .msg .avatar')].some(a => a.tagName === 'SPAN' && a.textContent === 'A')`)
	if n := eval[int](t, tab, `document.querySelectorAll('img.avatar').length`); n != 0 {
		t.Errorf("%d avatar images on the page, want none (no one has a picture on this server)", n)
	}
	// A request already sent would have been reported before the page's later API calls returned.
	e.api(t, ana, "POST", "/api/channels/"+ch.ID+"/messages", map[string]string{"body": "A second line", "nonce": "avatar-2"}, nil)
	waitFor(t, tab, "the second message", hasBody("A second line"))
	mu.Lock()
	defer mu.Unlock()
	if len(foreign) > 0 {
		t.Errorf("the page asked other hosts: %v", foreign)
	}
}
