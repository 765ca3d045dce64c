package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/push"
	"github.com/natterchat/natter/realtime/push/pushtest"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/server/passwordhash"
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

// settingsRun is the person's own settings, driven in the tab signed in as Ana.
type settingsRun struct {
	e        *env
	tab      context.Context
	ana, ben person
	hasher   *passwordhash.Hasher
}

// me is GET /api/me as Ana's token reads it.
type meView struct {
	DisplayName          string `json:"display_name"`
	Handle               string `json:"handle"`
	AvatarURL            string `json:"avatar_url"`
	PasswordEnrolled     bool   `json:"password_enrolled"`
	NotificationSettings struct {
		PushoverEnabled bool   `json:"pushover_enabled"`
		PushoverUserKey string `json:"pushover_user_key"`
	} `json:"notification_settings"`
}

func (s settingsRun) me(t *testing.T) meView {
	t.Helper()
	var out struct{ User meView }
	s.e.api(t, s.ana, "GET", "/api/me", nil, &out)
	return out.User
}

// status is the HTTP status the API answers GET path with for a raw session token.
func (s settingsRun) status(t *testing.T, token, path string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", s.e.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	res.Body.Close()
	return res.StatusCode
}

// fillSel sets a form field as typing would.
func fillSel(t *testing.T, tab context.Context, sel, value string) {
	t.Helper()
	eval[bool](t, tab, fmt.Sprintf(`(el => (el.value = %q, el.dispatchEvent(new Event('input')), el.dispatchEvent(new Event('change')), true))(document.querySelector(%q))`, value, sel))
}

func (s settingsRun) profile(t *testing.T) {
	tab := s.tab
	openMenuItem(t, tab, "Profile and account")
	form := `form[aria-label=Profile] `
	waitFor(t, tab, "the profile form", `document.querySelector('`+form+`input[name=display_name]')?.value === 'Ana Lima'`)
	// Ana has no password: the panel says so instead of offering a form.
	waitFor(t, tab, "no password form", `!document.querySelector('form[aria-label=Password]') && document.querySelector('.profile').textContent.includes('signs in without a password')`)
	fillSel(t, tab, form+"input[name=display_name]", "Ana Maria Lima")
	fillSel(t, tab, form+"input[name=handle]", "@Ana_Lima")
	click(t, tab, "save", form+"button[type=submit]")
	waitFor(t, tab, "saved", `document.querySelector('`+form+`p[role=status]').textContent === 'Saved.'`)
	// SPEC §User: a handle is accepted with a leading @, lowercased and stored without it.
	if me := s.me(t); me.DisplayName != "Ana Maria Lima" || me.Handle != "ana_lima" {
		t.Fatalf("the server has %q @%q", me.DisplayName, me.Handle)
	}
	waitFor(t, tab, "the sidebar's new name", `document.querySelector('.me .me-name')?.textContent === 'Ana Maria Lima'`)
	waitFor(t, tab, "the handle as kept", `document.querySelector('`+form+`input[name=handle]').value === 'ana_lima'`)
	shot(t, tab, "profile")
	checkA11y(t, tab, "profile")
	// SPEC §Limits: a handle is 2-32 characters. The API's sentence shows; nothing changes.
	fillSel(t, tab, form+"input[name=handle]", "a")
	click(t, tab, "save a one-letter handle", form+"button[type=submit]")
	waitFor(t, tab, "the refusal", `document.querySelector('`+form+`p.error')?.textContent.length > 0`)
	if me := s.me(t); me.Handle != "ana_lima" {
		t.Fatalf("a refused handle changed it to %q", me.Handle)
	}
	// SPEC §User: a handle is unique; Ben's is refused to Ana, whatever its case.
	s.e.api(t, s.ben, "PATCH", "/api/me", map[string]string{"handle": "okafor"}, nil)
	eval[bool](t, tab, `document.querySelector('`+form+`p[role=status]').textContent = '', true`)
	fillSel(t, tab, form+"input[name=handle]", "@Okafor")
	click(t, tab, "save Ben's handle", form+"button[type=submit]")
	waitFor(t, tab, "the refusal", `document.querySelector('`+form+`p.error')?.textContent.length > 0`)
	if me := s.me(t); me.Handle != "ana_lima" {
		t.Fatalf("a taken handle changed Ana's to %q", me.Handle)
	}
}

// tinyPNG is a 4×4 picture for the avatar upload.
func tinyPNG(t *testing.T) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for i := range img.Pix {
		img.Pix[i] = 0x80
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "me.png")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (s settingsRun) avatar(t *testing.T) {
	tab := s.tab
	form := `form[aria-label=Profile] `
	openMenuItem(t, tab, "Profile and account")
	// SPEC §User: avatar_url is blank or an http/https URL; anything else is refused with the
	// API's sentence and changes nothing.
	fillSel(t, tab, form+"input[name=avatar_url]", "javascript:alert(1)")
	click(t, tab, "save a script URL", form+"button[type=submit]")
	waitFor(t, tab, "the refusal", `document.querySelector('`+form+`p.error')?.textContent.length > 0`)
	if me := s.me(t); strings.HasPrefix(me.AvatarURL, "javascript") {
		t.Fatalf("avatar_url is %q", me.AvatarURL)
	}
	// A picture that cannot load falls back to the initial.
	broken := "http://127.0.0.1:1/missing.png"
	fillSel(t, tab, form+"input[name=avatar_url]", broken)
	click(t, tab, "save", form+"button[type=submit]")
	waitFor(t, tab, "saved", `document.querySelector('`+form+`p[role=status]').textContent === 'Saved.'`)
	if me := s.me(t); me.AvatarURL != broken {
		t.Fatalf("avatar_url is %q", me.AvatarURL)
	}
	waitFor(t, tab, "the initial instead", `document.querySelector('.me .me-avatar span.avatar')?.textContent === 'A' && !document.querySelector('.me .me-avatar img')`)
	// An uploaded picture becomes the avatar, at its address on this server.
	do(t, tab, "upload a picture", chromedp.SetUploadFiles(form+`input[type=file]`, []string{tinyPNG(t)}))
	waitFor(t, tab, "the upload's address", `document.querySelector('`+form+`input[name=avatar_url]').value.startsWith('`+s.e.URL+`/api/uploads/')`)
	click(t, tab, "save", form+"button[type=submit]")
	waitFor(t, tab, "the picture shown", `(img => img && img.complete && img.naturalWidth === 4)(document.querySelector('.me .me-avatar img.avatar'))`)
	if me := s.me(t); !strings.HasPrefix(me.AvatarURL, s.e.URL+"/api/uploads/") {
		t.Fatalf("avatar_url is %q", me.AvatarURL)
	}
}

func (s settingsRun) sessions(t *testing.T) {
	tab := s.tab
	laptop, phone := persisttest.Session(t, s.e.store, s.ana.user.ID), persisttest.Session(t, s.e.store, s.ana.user.ID)
	openMenuItem(t, tab, "Profile and account")
	waitFor(t, tab, "three sessions", `document.querySelectorAll('.sessions li').length === 3`)
	if n := eval[int](t, tab, `[...document.querySelectorAll('.sessions li')].filter(li => li.textContent.includes('this browser')).length`); n != 1 {
		t.Fatalf("%d sessions are marked as this browser", n)
	}
	eval[bool](t, tab, `[...document.querySelectorAll('.profile button')].find(b => b.textContent === 'Sign out everywhere else').click() ?? true`)
	waitFor(t, tab, "signed out elsewhere", `document.querySelector('section[aria-label=Sessions] [role=status]')?.textContent === 'Signed out of 2 other sessions.' && document.querySelectorAll('.sessions li').length === 1`)
	for _, token := range []string{laptop, phone} {
		if got := s.status(t, token, "/api/me"); got != http.StatusUnauthorized {
			t.Fatalf("a session signed out elsewhere answers %d", got)
		}
	}
	if got := s.status(t, s.ana.token, "/api/me"); got != http.StatusOK {
		t.Fatalf("this browser's session answers %d", got)
	}
}

func (s settingsRun) password(t *testing.T) {
	tab := s.tab
	ctx := context.Background()
	hash, err := s.hasher.Hash(ctx, "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := persist.WithTxV(ctx, s.e.store, func(tx *persist.Tx) (persist.User, error) { return tx.PasswordSet(ctx, s.ana.user.Email, hash) }); err != nil {
		t.Fatalf("enrol: %v", err)
	}
	other := persisttest.Session(t, s.e.store, s.ana.user.ID)
	reloaded(t, tab, `document.querySelector('.me .dot.online')`)
	openMenuItem(t, tab, "Profile and account")
	form := `form[aria-label=Password] `
	waitFor(t, tab, "the password form", `document.querySelector('`+form+`input[name=current_password]')`)
	change := func(current, next, again string) {
		fillSel(t, tab, form+"input[name=current_password]", current)
		fillSel(t, tab, form+"input[name=new_password]", next)
		fillSel(t, tab, form+"input[name=confirm_password]", again)
		eval[bool](t, tab, `document.querySelector('`+form+`p[role=status]').textContent = '', true`)
		click(t, tab, "change the password", form+"button[type=submit]")
	}
	refused := func(what string) {
		t.Helper()
		waitFor(t, tab, what, `document.querySelector('`+form+`p.error')?.textContent.length > 0`)
		if got := s.status(t, other, "/api/me"); got != http.StatusOK {
			t.Fatalf("%s: the other session answers %d", what, got)
		}
	}
	change("wrong horse", "battery staple", "battery staple")
	refused("a wrong current password refused")
	change("correct horse", "battery staple", "battery stapler")
	refused("two different new passwords refused")
	// SPEC §Passwords: 8-256 code points.
	change("correct horse", "seven77", "seven77")
	refused("a seven-character password refused")
	change("correct horse", "battery staple", "battery staple")
	waitFor(t, tab, "changed", `document.querySelector('`+form+`p[role=status]').textContent === 'Password changed. Your other sessions were signed out.'`)
	if got := s.status(t, other, "/api/me"); got != http.StatusUnauthorized {
		t.Fatalf("after the change the other session answers %d", got)
	}
	if got := s.status(t, s.ana.token, "/api/me"); got != http.StatusOK {
		t.Fatalf("after the change this browser's session answers %d", got)
	}
}

func (s settingsRun) pushover(t *testing.T) {
	tab := s.tab
	openMenuItem(t, tab, "Notifications")
	form := `form[aria-label=Pushover] `
	waitFor(t, tab, "the Pushover form", `document.querySelector('`+form+`input[name=pushover_user_key]')`)
	eval[bool](t, tab, `document.querySelector('`+form+`input[name=pushover_enabled]').checked = true`)
	// SPEC §User: the user key is 30 characters.
	fillSel(t, tab, form+"input[name=pushover_user_key]", "tooshort")
	click(t, tab, "save", form+"button[type=submit]")
	waitFor(t, tab, "the refusal", `document.querySelector('`+form+`p.error')?.textContent.length > 0`)
	if me := s.me(t); me.NotificationSettings.PushoverEnabled || me.NotificationSettings.PushoverUserKey != "" {
		t.Fatalf("a refused key changed the settings: %+v", me.NotificationSettings)
	}
	key := "u" + strings.Repeat("a1", 14) + "z"
	fillSel(t, tab, form+"input[name=pushover_user_key]", key)
	click(t, tab, "save", form+"button[type=submit]")
	waitFor(t, tab, "saved", `document.querySelector('`+form+`p[role=status]').textContent === 'Saved.'`)
	if me := s.me(t); !me.NotificationSettings.PushoverEnabled || me.NotificationSettings.PushoverUserKey != key {
		t.Fatalf("the settings are %+v", me.NotificationSettings)
	}
}

// contrast lists the text on the page whose contrast with its background is under 4.5:1
// (WCAG AA, CLIENT.md), with the page background's luminance.
const contrast = `(() => {
  const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }; return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const bgOf = (el) => { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor); if (c.length === 3 || c[3] > 0) return c; } return [255, 255, 255]; };
  const low = [];
  const sels = ['body', '.me-name', '.place', '.group-head', '.conv-header h1', '.msg .body', '.msg .author', '.muted', '#panel-title', '.notify-state',
    '.field span', '.btn', '.menu-item', '.sessions li', '.devices li', '.levels label', '.check', '.error'];
  let seen = 0;
  for (const sel of sels) for (const el of document.querySelectorAll(sel)) {
    if (!el.textContent.trim() || !el.getClientRects().length) continue;
    seen++;
    const a = lum(rgb(getComputedStyle(el).color)), b = lum(bgOf(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) low.push(sel + ': ' + ratio.toFixed(2));
  }
  return JSON.stringify({ background: lum(bgOf(document.body)), seen, low: [...new Set(low)] });
})()`

func (s settingsRun) themes(t *testing.T) {
	tab := s.tab
	openMenuItem(t, tab, "Profile and account")
	waitFor(t, tab, "the sessions", `document.querySelectorAll('.sessions li').length > 0`)
	for _, scheme := range []string{"dark", "light"} {
		if _, err := chromedp.Call(tab, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
			t.Fatalf("emulate %s: %v", scheme, err)
		}
		var got struct {
			Background float64
			Seen       int
			Low        []string
		}
		if err := json.Unmarshal([]byte(eval[string](t, tab, contrast)), &got); err != nil {
			t.Fatal(err)
		}
		if dark := got.Background < 0.1; dark != (scheme == "dark") {
			t.Fatalf("with the system set to %s the page's background has luminance %.2f", scheme, got.Background)
		}
		if got.Seen < 20 || len(got.Low) > 0 {
			t.Fatalf("%s theme: %d texts checked, under 4.5:1: %v", scheme, got.Seen, got.Low)
		}
		if scheme == "dark" {
			shot(t, tab, "settings-dark")
		}
	}
}
