package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/realtime/push"
	"github.com/natterchat/natter/realtime/push/pushtest"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/server/netpolicy"
)

// standInPushService replaces the browser's push service in the page, since headless Chromium
// reaches none: PushManager's subscribe returns a subscription at the test's push service
// (pushtest, which decrypts what the server sends) with keys the test holds, and remembers
// the applicationServerKey it was made with (in localStorage, so a reload keeps it, as a real
// browser keeps its subscription). The client's code and the server's sending stay real.
func standInPushService(endpoint, p256dh, auth string) string {
	return fmt.Sprintf(`(() => {
  const endpoint = %q, keys = { p256dh: %q, auth: %q };
  const b64 = (u8) => btoa(String.fromCharCode(...u8)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  const unb64 = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - s.length %% 4) %% 4)), (c) => c.charCodeAt(0));
  const made = (key) => ({ endpoint, expirationTime: null, options: { userVisibleOnly: true, applicationServerKey: unb64(key).buffer },
    toJSON: () => ({ endpoint, expirationTime: null, keys }),
    unsubscribe: async () => { localStorage.removeItem('test.push.key'); return true; } });
  PushManager.prototype.subscribe = async function (opts) {
    const key = b64(new Uint8Array(opts.applicationServerKey.buffer || opts.applicationServerKey));
    localStorage.setItem('test.push.key', key);
    localStorage.setItem('test.push.subscribes', String(Number(localStorage.getItem('test.push.subscribes') || 0) + 1));
    return made(key);
  };
  PushManager.prototype.getSubscription = async function () {
    const key = localStorage.getItem('test.push.key');
    return key ? made(key) : null;
  };
})()`, endpoint, p256dh, auth)
}

// pushEnv is a Natter whose server has a push key pair and runs the push deliverer, sending to
// the test's push service on loopback (the address policy tests use; the default refuses it).
func pushEnv(t *testing.T) (*env, *pushtest.Service) {
	t.Helper()
	svc := pushtest.New(t)
	e := newEnv(t, func(c *server.Config) { c.PushPolicy = netpolicy.PublicOrLoopback })
	if _, err := push.EnsureKey(context.Background(), e.store); err != nil {
		t.Fatalf("push key: %v", err)
	}
	d, err := push.New(push.Config{Store: e.store, NATS: e.nc, Logger: slog.New(slog.DiscardHandler), Policy: netpolicy.PublicOrLoopback,
		RootCAs: svc.RootCAs, DiscoverInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("push deliverer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("push deliverer: %v", err)
		}
	})
	return e, svc
}

// pushStatus is GET /api/me/push as the test reads it.
type pushStatus struct {
	Enabled         bool   `json:"enabled"`
	PublicKey       string `json:"public_key"`
	ThisDevice      bool   `json:"this_device"`
	ThisDeviceStale bool   `json:"this_device_stale"`
	Devices         []struct {
		Label      string `json:"label"`
		ThisDevice bool   `json:"this_device"`
	} `json:"devices"`
}

func (e *env) pushStatus(t *testing.T, p person, digest string) pushStatus {
	t.Helper()
	var st pushStatus
	e.api(t, p, "GET", "/api/me/push?device="+digest, nil, &st)
	return st
}

// serviceWorker attaches to the page's service worker, to evaluate in it.
func serviceWorker(t *testing.T, tab context.Context, scope string) context.Context {
	t.Helper()
	for range 200 {
		infos, err := chromedp.CallBrowser(tab, target.GetTargets, target.GetTargetsParams{})
		if err != nil {
			t.Fatalf("targets: %v", err)
		}
		for _, info := range infos.TargetInfos {
			if info.Type == "service_worker" && strings.HasPrefix(info.URL, scope) {
				ctx, cancel := chromedp.NewContext(tab, chromedp.WithTargetID(info.TargetID))
				t.Cleanup(cancel)
				return ctx
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no service worker at %s", scope)
	return nil
}

// TestBrowserPushAndSettings drives notifications and the person's own settings: Web Push on
// this device against a local push service that decrypts what the server sends, the channel's
// level, the service worker's notification and its click, re-registration after the server's
// key is rotated; then the profile, the password, sessions and Pushover.
func TestBrowserPushAndSettings(t *testing.T) {
	t.Parallel()
	e, svc := pushEnv(t)
	ana := e.person(t, "Ana Lima")
	ben := e.person(t, "Ben Okafor")
	var ws struct {
		Workspace struct {
			ID      string `json:"id"`
			RouteID string `json:"route_id"`
		} `json:"workspace"`
	}
	e.api(t, ana, "POST", "/api/workspaces", map[string]string{"name": "Acme"}, &ws)
	wsID := ws.Workspace.ID
	e.addMember(t, wsID, ben.user.ID)
	channel := func(name string) persist.Channel {
		var c struct{ Channel persist.Channel }
		e.api(t, ana, "POST", "/api/workspaces/"+wsID+"/channels", map[string]string{"name": name}, &c)
		return c.Channel
	}
	general, random := channel("general"), channel("random")

	b := newBrowser(t, e)
	tab := b.tab(t, ana)
	dev := svc.NewDevice(t)
	if _, err := chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: standInPushService(dev.Endpoint, dev.P256dh, dev.Auth)}); err != nil {
		t.Fatalf("stand in for the push service: %v", err)
	}
	if _, err := chromedp.CallBrowser(tab, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: "granted", Origin: e.URL,
		BrowserContextID: chromedp.FromContext(tab).BrowserContextID}); err != nil {
		t.Fatalf("grant notifications: %v", err)
	}
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
		do(t, tab, "enable", chromedp.Click(".notify-enable"))
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
	})

	var pushed pushtest.Received
	t.Run("ChannelLevelAndDelivery", func(t *testing.T) {
		// The default level is mentions; Ana asks for everything in #general.
		waitFor(t, tab, "the level", `document.querySelector('.levels input[value=mentions]')?.checked === true`)
		do(t, tab, "pick all", chromedp.Click(`.levels input[value=all]`))
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
			URL: "/" + ws.Workspace.RouteID + "/" + general.RouteID}
		if pushed.Payload != want {
			t.Fatalf("the push decrypts to %+v, want %+v", pushed.Payload, want)
		}
		// Muted is a choice the server keeps.
		do(t, tab, "mute", chromedp.Click(`.levels input[value=muted]`))
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
		do(t, tab, "go to #random", chromedp.Navigate(e.URL+"/"+ws.Workspace.RouteID+"/"+random.RouteID))
		waitFor(t, tab, "#random", `document.querySelector('.conv-header h1')?.textContent === 'random'`)
		regs := chromedp.Events(tab, serviceworker.WorkerRegistrationUpdated)
		if _, err := chromedp.Call(tab, serviceworker.Enable, struct{}{}); err != nil {
			t.Fatalf("service worker domain: %v", err)
		}
		var regID serviceworker.RegistrationID
		ctx, cancel := context.WithTimeout(tab, waitLimit)
		defer cancel()
		for ev, err := range regs {
			if err != nil {
				t.Fatalf("registrations: %v", err)
			}
			for _, r := range ev.Registrations {
				if r.ScopeURL == e.URL+"/" && !r.IsDeleted {
					regID = r.RegistrationID
				}
			}
			if regID != "" || ctx.Err() != nil {
				break
			}
		}
		if regID == "" {
			t.Fatal("no service worker registration at /")
		}
		raw, _ := json.Marshal(pushed.Payload)
		if _, err := chromedp.Call(tab, serviceworker.DeliverPushMessage, serviceworker.DeliverPushMessageParams{
			Origin: e.URL, RegistrationID: regID, Data: string(raw)}); err != nil {
			t.Fatalf("deliver the push: %v", err)
		}
		shown := `navigator.serviceWorker.ready.then(r => r.getNotifications()).then(ns => JSON.stringify(ns.map(n => ({title: n.title, body: n.body, tag: n.tag, data: n.data}))))`
		want := fmt.Sprintf(`[{"title":"Ben Okafor in #general","body":"Lunch at noon?","tag":%q,"data":{"url":%q,"message":%q,"user_id":%q}}]`,
			pushed.Payload.Tag, pushed.Payload.URL, pushed.Payload.Tag, ana.user.ID)
		waitFor(t, tab, "the notification", shown+`.then(s => s === '`+want+`')`)
		// A click on a notification cannot be made headless: the worker's click handler calls
		// openMessage with the notification's data, so the test calls it with the same data.
		sw := serviceWorker(t, tab, e.URL+"/sw.js")
		got := eval[string](t, sw, `self.registration.getNotifications().then(([n]) => openMessage(n.data))`)
		if got != "posted" {
			t.Fatalf("openMessage with a page open answered %q", got)
		}
		waitFor(t, tab, "the message opened", `document.querySelector('.conv-header h1')?.textContent === 'general' && document.querySelector('.list .msg[data-id="`+pushed.Payload.Tag+`"]')`)
		// Without an open page the worker opens one at the conversation with the message in the
		// fragment; that page opens the message.
		do(t, tab, "go to #random", chromedp.Navigate(e.URL+"/"+ws.Workspace.RouteID+"/"+random.RouteID))
		waitFor(t, tab, "#random", `document.querySelector('.conv-header h1')?.textContent === 'random'`)
		do(t, tab, "open the notification's address", chromedp.Navigate(e.URL+pushed.Payload.URL+"#message="+pushed.Payload.Tag))
		waitFor(t, tab, "the message opened", `document.querySelector('.conv-header h1')?.textContent === 'general' && document.querySelector('.list .msg[data-id="`+pushed.Payload.Tag+`"]') && location.hash === ''`)
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
		do(t, tab, "open the app again", chromedp.Reload())
		waitFor(t, tab, "the channel to open", `document.querySelector('.conv-header h1')`)
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
		do(t, tab, "turn off", chromedp.Click(`.notify .notify-block button.btn`))
		waitFor(t, tab, "off", `document.querySelector('.notify-state')?.textContent === 'Notifications are off for this device.'`)
		if st := e.pushStatus(t, ana, dev.Digest); st.ThisDevice || len(st.Devices) != 0 {
			t.Fatalf("after turning off the server says %+v", st)
		}
	})
}

// openMenuItem opens an entry of the personal menu.
func openMenuItem(t *testing.T, tab context.Context, label string) {
	t.Helper()
	do(t, tab, "open the personal menu", chromedp.Click(`.me .menu-btn`))
	waitFor(t, tab, "the menu", `[...document.querySelectorAll('.me [role=menuitem]')].some(b => b.textContent === '`+label+`')`)
	eval[bool](t, tab, `[...document.querySelectorAll('.me [role=menuitem]')].find(b => b.textContent === '`+label+`').click() ?? true`)
	waitFor(t, tab, "the panel", `document.querySelector('#panel-title')?.textContent && !document.querySelector('.panel').hidden`)
}
