package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/realtime/push"
	"github.com/natterchat/natter/realtime/push/pushtest"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/system"
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
func pushEnv(t *testing.T, config ...func(*server.Config)) (*env, *pushtest.Service) {
	t.Helper()
	svc := pushtest.New(t)
	edits := []func(*system.Config){func(c *system.Config) {
		c.Server.PushPolicy = outbound.PublicOrLoopback
		c.Push = &push.Config{Policy: outbound.PublicOrLoopback, RootCAs: svc.RootCAs, DiscoverInterval: 50 * time.Millisecond}
	}}
	for _, fn := range config {
		edits = append(edits, func(c *system.Config) { fn(&c.Server) })
	}
	e := newSystemEnv(t, edits...)
	return e, svc
}

// notificationPermission answers the site's permission prompt for the tab's browser context,
// as a person would ("granted" or "denied").
func notificationPermission(t *testing.T, tab context.Context, origin, setting string) {
	t.Helper()
	if _, err := chromedp.CallBrowser(tab, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: cdpbrowser.PermissionSetting(setting),
		Origin: origin, BrowserContextID: chromedp.FromContext(tab).BrowserContextID}); err != nil {
		t.Fatalf("notifications %s: %v", setting, err)
	}
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

// notification reads the notification the service worker shows for tag, as JSON ("" when none).
func notification(tag string) string {
	return fmt.Sprintf(`navigator.serviceWorker.ready.then(r => r.getNotifications({tag: %q})).then(([n]) => n ? JSON.stringify({title: n.title, body: n.body, tag: n.tag, data: n.data}) : '')`, tag)
}

// worker is the page's service worker, as the DevTools protocol reaches it.
type worker struct {
	tab    context.Context
	origin string
	id     serviceworker.RegistrationID
}

// workerOf finds the registration whose scope is the whole client.
func workerOf(t *testing.T, tab context.Context, origin string) worker {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, waitLimit)
	defer cancel()
	// Enabling the domain reports every registration (and delivering needs it on); it is turned
	// off first, so a second look-up hears them afresh.
	_, _ = chromedp.Call(tab, serviceworker.Disable, struct{}{})
	regs := chromedp.Events(ctx, serviceworker.WorkerRegistrationUpdated)
	if _, err := chromedp.Call(tab, serviceworker.Enable, struct{}{}); err != nil {
		t.Fatalf("service worker domain: %v", err)
	}
	for ev, err := range regs {
		if err != nil {
			t.Fatalf("no service worker registration at /: %v", err)
		}
		for _, r := range ev.Registrations {
			if r.ScopeURL == origin+"/" && !r.IsDeleted {
				return worker{tab: tab, origin: origin, id: r.RegistrationID}
			}
		}
	}
	t.Fatal("no service worker registration at /")
	return worker{}
}

// deliver hands a payload to the worker as the browser does with a push it has decrypted.
func (w worker) deliver(t *testing.T, p push.Payload) {
	t.Helper()
	raw, _ := json.Marshal(p)
	if _, err := chromedp.Call(w.tab, serviceworker.DeliverPushMessage, serviceworker.DeliverPushMessageParams{
		Origin: w.origin, RegistrationID: w.id, Data: string(raw)}); err != nil {
		t.Fatalf("deliver the push: %v", err)
	}
}

// deliverUntil delivers p until the page sees what shown says. The DevTools command stands in
// for the push service and is answered before the worker has the message: under load one was
// seen lost (the worker being started again). The notification's tag makes a second delivery of
// the same message replace the first, as a push service's retry does.
func (w worker) deliverUntil(t *testing.T, p push.Payload, shown string) {
	t.Helper()
	for try := 1; ; try++ {
		w.deliver(t, p)
		ctx, cancel := context.WithTimeout(w.tab, 5*time.Second)
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](shown, chromedp.WithPollingInterval(50*time.Millisecond)))
		cancel()
		if err == nil {
			return
		}
		if try == 4 {
			t.Fatalf("the notification of %s never showed: %v", p.Tag, err)
		}
	}
}

// click stands in for a click on the notification of tag. Headless Chromium cannot click a
// notification: the worker's notificationclick handler calls openMessage with the
// notification's data, so the test calls it, in the worker, with the same data. With a page
// of the client open, the page is told to open the message.
func (w worker) click(t *testing.T, tag string) {
	t.Helper()
	// The page is marked: an open page opens the message itself, with no reload that would
	// lose the mark.
	eval[bool](t, w.tab, `window.notReloaded = true`)
	sw := serviceWorker(t, w.tab, w.origin+"/sw.js")
	got := eval[string](t, sw, fmt.Sprintf(`self.registration.getNotifications({tag: %q}).then(([n]) => openMessage(n.data))`, tag))
	if got != "posted" {
		t.Fatalf("openMessage with a page open answered %q", got)
	}
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
