package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/realtime/push"
	"github.com/natterchat/natter/realtime/push/pushtest"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/server/passwordhash"
)

// TestBrowserPushAndSettings drives notifications and the person's own settings: Web Push on
// this device against a local push service that decrypts what the server sends, the channel's
// level, the service worker's notification and its click, re-registration after the server's
// key is rotated; then the profile, the password, sessions and Pushover.
func TestBrowserPushAndSettings(t *testing.T) {
	t.Parallel()
	// Cheap derivations: the test is about the client, not argon2id's cost.
	hasher, err := passwordhash.New(passwordhash.Config{Params: passwordhash.Params{Time: 1, MemoryKiB: 64, Threads: 1}, Concurrency: 2})
	if err != nil {
		t.Fatalf("hasher: %v", err)
	}
	e, svc := pushEnv(t, func(c *server.Config) { c.PasswordAuth, c.Passwords = true, hasher })
	ana := e.person(t, "Ana Lima")
	ben := e.person(t, "Ben Okafor")
	ws := e.workspace(t, ana, "Acme")
	wsID := ws.ID
	e.addMember(t, wsID, ben.user.ID)
	general, random := e.channel(t, ana, wsID, "general"), e.channel(t, ana, wsID, "random")

	b := newBrowser(t, e)
	tab := b.tab(t, ana)
	dev := svc.NewDevice(t)
	if _, err := chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: standInPushService(dev.Endpoint, dev.P256dh, dev.Auth)}); err != nil {
		t.Fatalf("stand in for the push service: %v", err)
	}
	notificationPermission(t, tab, e.URL, "granted")
	do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
	waitFor(t, tab, "the channel to open", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
	waitFor(t, tab, "the socket to connect", `document.querySelector('.me .dot.online')`)

	t.Run("EnableOnThisDevice", func(t *testing.T) {
		if st := e.pushStatus(t, ana, dev.Digest); !st.Enabled || st.ThisDevice {
			t.Fatalf("before: %+v", st)
		}
		openMenuItem(t, tab, "Notifications")
		waitFor(t, tab, "the button", `document.querySelector('.notify-enable')?.textContent === 'Enable notifications on this device'`)
		waitFor(t, tab, "the service worker to control the page", `navigator.serviceWorker.controller !== null`)
		click(t, tab, "enable", ".notify-enable")
		waitFor(t, tab, "on", `document.querySelector('.notify-state')?.textContent === 'Notifications are on for this device.'`)
		st := e.pushStatus(t, ana, dev.Digest)
		if !st.ThisDevice || st.ThisDeviceStale || len(st.Devices) != 1 || !strings.Contains(st.Devices[0].Label, " on ") {
			t.Fatalf("after enabling, the server says %+v", st)
		}
		// The subscription was made with the server's own key.
		if got := eval[string](t, tab, `localStorage.getItem('test.push.key')`); got != st.PublicKey {
			t.Fatalf("subscribed with key %q, the server's is %q", got, st.PublicKey)
		}
		waitFor(t, tab, "this device listed", `[...document.querySelectorAll('.devices li')].some(li => li.textContent.includes('this device'))`)
		shot(t, tab, "notifications")
		checkA11y(t, tab, "notifications")
	})

	var pushed pushtest.Received
	t.Run("ChannelLevelAndDelivery", func(t *testing.T) {
		// The default level is mentions; Ana asks for everything in #general.
		waitFor(t, tab, "the level", `document.querySelector('.levels input[value=mentions]')?.checked === true`)
		click(t, tab, "pick all", `.levels input[value=all]`)
		var pref struct {
			NotificationPreference struct{ Level string } `json:"notification_preference"`
		}
		for range 100 {
			e.api(t, ana, "GET", "/api/channels/"+general.ID+"/notification-preference", nil, &pref)
			if pref.NotificationPreference.Level == "all" {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if pref.NotificationPreference.Level != "all" {
			t.Fatalf("the level is %q", pref.NotificationPreference.Level)
		}
		var sent struct{ Message persist.Message }
		e.api(t, ben, "POST", "/api/channels/"+general.ID+"/messages", map[string]string{"body": "Lunch at noon?"}, &sent)
		pushed = svc.Next(t)
		want := push.Payload{UserID: ana.user.ID, Title: "Ben Okafor in #general", Body: "Lunch at noon?", Tag: sent.Message.ID,
			URL: "/" + ws.RouteID + "/" + general.RouteID}
		if pushed.Payload != want {
			t.Fatalf("the push decrypts to %+v, want %+v", pushed.Payload, want)
		}
		// Muted is a choice the server keeps.
		click(t, tab, "mute", `.levels input[value=muted]`)
		for range 100 {
			e.api(t, ana, "GET", "/api/channels/"+general.ID+"/notification-preference", nil, &pref)
			if pref.NotificationPreference.Level == "muted" {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if pref.NotificationPreference.Level != "muted" {
			t.Fatalf("the level is %q", pref.NotificationPreference.Level)
		}
	})

	t.Run("NotificationAndClick", func(t *testing.T) {
		if pushed.Payload.Tag == "" {
			t.Skip("no push was received")
		}
		// Ana is elsewhere when the push comes.
		do(t, tab, "go to #random", chromedp.Navigate(e.URL+"/"+ws.RouteID+"/"+random.RouteID))
		waitFor(t, tab, "#random", `document.querySelector('.conv-header h1')?.textContent === 'random'`)
		w := workerOf(t, tab, e.URL)
		want := fmt.Sprintf(`{"title":"Ben Okafor in #general","body":"Lunch at noon?","tag":%q,"data":{"url":%q,"message":%q,"user_id":%q}}`,
			pushed.Payload.Tag, pushed.Payload.URL, pushed.Payload.Tag, ana.user.ID)
		w.deliverUntil(t, pushed.Payload, notification(pushed.Payload.Tag)+`.then(s => s === '`+want+`')`)
		w.click(t, pushed.Payload.Tag)
		waitFor(t, tab, "the message opened", `window.notReloaded && document.querySelector('.conv-header h1')?.textContent === 'general' && document.querySelector('.list .msg[data-id="`+pushed.Payload.Tag+`"]')`)
		// Without an open page the worker opens one at the conversation with the message in the
		// fragment; that page opens the message.
		do(t, tab, "go to #random", chromedp.Navigate(e.URL+"/"+ws.RouteID+"/"+random.RouteID))
		waitFor(t, tab, "#random", `document.querySelector('.conv-header h1')?.textContent === 'random'`)
		do(t, tab, "open the notification's address", chromedp.Navigate(e.URL+pushed.Payload.URL+"#message="+pushed.Payload.Tag))
		waitFor(t, tab, "the message opened", `document.querySelector('.conv-header h1')?.textContent === 'general' && document.querySelector('.list .msg[data-id="`+pushed.Payload.Tag+`"]') && location.hash === ''`)
	})

	t.Run("ReplyOpensItsThread", func(t *testing.T) {
		if pushed.Payload.Tag == "" {
			t.Skip("no push was received")
		}
		e.api(t, ana, "PUT", "/api/channels/"+general.ID+"/notification-preference", map[string]string{"level": "all"}, nil)
		var reply struct{ Message persist.Message }
		e.api(t, ben, "POST", "/api/messages/"+pushed.Payload.Tag+"/thread/replies", map[string]string{"body": "Or one?"}, &reply)
		got := svc.Next(t)
		if got.Payload.Tag != reply.Message.ID || got.Payload.Body != "Or one?" || !strings.HasPrefix(got.Payload.URL, "/"+ws.RouteID+"/M") {
			t.Fatalf("the reply's push decrypts to %+v", got.Payload)
		}
		do(t, tab, "go to #random", chromedp.Navigate(e.URL+"/"+ws.RouteID+"/"+random.RouteID))
		waitFor(t, tab, "#random", `document.querySelector('.conv-header h1')?.textContent === 'random'`)
		w := workerOf(t, tab, e.URL)
		w.deliverUntil(t, got.Payload, notification(got.Payload.Tag))
		w.click(t, got.Payload.Tag)
		waitFor(t, tab, "the thread opened", `window.notReloaded && document.querySelector('#panel-title')?.textContent === 'Thread' && document.querySelector('.panel .msg[data-id="`+reply.Message.ID+`"]') && document.querySelector('.conv-header h1')?.textContent === 'general'`)
	})

	t.Run("WorkerKeepsToThisOrigin", func(t *testing.T) {
		// A payload naming another site (the server never sends one) leads to the client's root.
		w := workerOf(t, tab, e.URL)
		w.deliverUntil(t, push.Payload{UserID: ana.user.ID, Title: "<b>Eve</b>", Body: "x", Tag: "msg_hostile", URL: "https://evil.example/steal"},
			notification("msg_hostile")+`.then(s => s && JSON.parse(s).data.url === '/' && JSON.parse(s).title === '<b>Eve</b>')`)
	})

	t.Run("StaleDeviceRegistersAgain", func(t *testing.T) {
		before := e.pushStatus(t, ana, dev.Digest)
		if _, _, err := push.RotateKey(context.Background(), e.store); err != nil {
			t.Fatalf("rotate: %v", err)
		}
		if st := e.pushStatus(t, ana, dev.Digest); !st.ThisDeviceStale || st.PublicKey == before.PublicKey {
			t.Fatalf("after the rotation the server says %+v", st)
		}
		subscribes := eval[string](t, tab, `localStorage.getItem('test.push.subscribes')`)
		reloaded(t, tab, `document.querySelector('.conv-header h1')`)
		waitFor(t, tab, "a new subscription", `localStorage.getItem('test.push.subscribes') !== '`+subscribes+`'`)
		var st pushStatus
		for range 100 {
			if st = e.pushStatus(t, ana, dev.Digest); st.ThisDevice && !st.ThisDeviceStale {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !st.ThisDevice || st.ThisDeviceStale {
			t.Fatalf("the device did not register again: %+v", st)
		}
		if got := eval[string](t, tab, `localStorage.getItem('test.push.key')`); got != st.PublicKey {
			t.Fatalf("registered again with key %q, the server's is %q", got, st.PublicKey)
		}
	})

	t.Run("TurnOff", func(t *testing.T) {
		openMenuItem(t, tab, "Notifications")
		waitFor(t, tab, "on", `document.querySelector('.notify-state')?.textContent === 'Notifications are on for this device.'`)
		click(t, tab, "turn off", `.notify .notify-block button.btn`)
		waitFor(t, tab, "off", `document.querySelector('.notify-state')?.textContent === 'Notifications are off for this device.'`)
		if st := e.pushStatus(t, ana, dev.Digest); st.ThisDevice || len(st.Devices) != 0 {
			t.Fatalf("after turning off the server says %+v", st)
		}
	})

	t.Run("BlockedByTheBrowser", func(t *testing.T) {
		// Ben's browser refuses notifications to the site: the panel says so, offers no button
		// that could not work, and registers nothing.
		bTab := b.tab(t, ben)
		notificationPermission(t, bTab, e.URL, "denied")
		do(t, bTab, "open the client", chromedp.Navigate(e.URL+"/"))
		waitFor(t, bTab, "the socket to connect", `document.querySelector('.me .dot.online')`)
		openMenuItem(t, bTab, "Notifications")
		waitFor(t, bTab, "blocked", `document.querySelector('.notify-state')?.textContent === 'Notifications are blocked for this site in the browser’s settings.' && document.querySelector('.notify-enable').disabled`)
		if st := e.pushStatus(t, ben, ""); len(st.Devices) != 0 {
			t.Fatalf("Ben has devices: %+v", st.Devices)
		}
	})

	t.Run("PushOffOnTheServer", func(t *testing.T) {
		// A server without a key pair has push off (SPEC §Web push: enabled false): the panel says
		// so and offers nothing to enable. Same browser, another server on another port.
		off := newEnv(t)
		cy := off.person(t, "Cy Park")
		off.channel(t, cy, off.workspace(t, cy, "Elsewhere").ID, "general")
		cTab := b.tab(t, cy)
		do(t, cTab, "open the client", chromedp.Navigate(off.URL+"/"))
		waitFor(t, cTab, "the socket to connect", `document.querySelector('.me .dot.online')`)
		openMenuItem(t, cTab, "Notifications")
		waitFor(t, cTab, "off", `document.querySelector('.notify-block')?.textContent.includes('Push notifications are turned off on this server.') && !document.querySelector('.notify-enable')`)
	})

	s := settingsRun{e: e, tab: tab, ana: ana, ben: ben, hasher: hasher}
	t.Run("Profile", s.profile)
	t.Run("Avatar", s.avatar)
	t.Run("Sessions", s.sessions)
	t.Run("Password", s.password)
	t.Run("Pushover", s.pushover)
	t.Run("Themes", s.themes)
}

// click clicks the element sel finds once there is one, in the page: a view redrawn between
// finding a node and clicking it (the sidebar redraws when the connection comes up) cannot
// make the click miss.
func click(t *testing.T, tab context.Context, what, sel string) {
	t.Helper()
	waitFor(t, tab, what, fmt.Sprintf(`(el => !!el && (el.click(), true))(document.querySelector(%q))`, sel))
}

// reloaded reloads the page and waits until expr holds in the new document. Evaluations that
// land in the old document's context while it goes away are tried again.
func reloaded(t *testing.T, tab context.Context, expr string) {
	t.Helper()
	do(t, tab, "reload", chromedp.Reload())
	deadline := time.Now().Add(waitLimit)
	for {
		ctx, cancel := context.WithTimeout(tab, time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(`+expr+`)`))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the reload, %s never held (last error %v)", expr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openMenuItem opens an entry of the personal menu.
func openMenuItem(t *testing.T, tab context.Context, label string) {
	t.Helper()
	// What the panel shows now is marked, so the wait below sees the new opening's content.
	eval[bool](t, tab, `(el => (el && el.setAttribute('data-before', ''), true))(document.querySelector('.panel-body > *'))`)
	click(t, tab, "open the personal menu", `.me .menu-btn`)
	waitFor(t, tab, "the menu", `[...document.querySelectorAll('.me [role=menuitem]')].some(b => b.textContent === '`+label+`')`)
	eval[bool](t, tab, `[...document.querySelectorAll('.me [role=menuitem]')].find(b => b.textContent === '`+label+`').click() ?? true`)
	waitFor(t, tab, "the panel", `document.querySelector('#panel-title')?.textContent && !document.querySelector('.panel').hidden && document.querySelector('.panel-body > *:not([data-before])')`)
}
