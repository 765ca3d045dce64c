package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/server/blob"
	"github.com/natterchat/natter/streams"
	"github.com/natterchat/natter/streams/streamstest"
	"github.com/natterchat/natter/system"
)

// screenshots, when set, is the directory the browser tests write the client's pictures to
// (docs/client uses them): go test ./server/web -run TestBrowser -args -screenshots=$PWD/docs/client
var screenshots = flag.String("screenshots", "", "directory to write the client's screenshots to")

// env is a real Natter (system.New, as natter serve runs it) on a fixed loopback address over a
// fresh database and embedded NATS. restart stops the system and starts a new one on the same
// address, as a deploy would; the database and NATS stay.
type env struct {
	store   *persist.Store
	nc      *nats.Conn
	emb     *streams.Embedded
	uploads blob.Store
	addr    string
	URL     string
	dbURL   string // for seeding long histories in benchmarks
	version string // the web bundle's version the server reports; "" is the default
	stop    func()
	config  []func(*system.Config) // newEnv's options, applied on every start
}

// newEnv starts a Natter whose server configuration each of config edits.
func newEnv(t testing.TB, config ...func(*server.Config)) *env {
	t.Helper()
	edits := make([]func(*system.Config), len(config))
	for i, fn := range config {
		edits[i] = func(c *system.Config) { fn(&c.Server) }
	}
	return newSystemEnv(t, edits...)
}

// newSystemEnv starts a Natter whose whole configuration each of config edits.
func newSystemEnv(t testing.TB, config ...func(*system.Config)) *env {
	t.Helper()
	emb, nc := streamstest.Embedded(t)
	var dbURL string
	store := persisttest.NewStore(t, func(c *persist.Config) { *c = streams.StoreConfig(nc, *c); dbURL = c.URL })
	uploads, err := blob.NewDisk(t.TempDir())
	if err != nil {
		t.Fatalf("uploads: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	e := &env{store: store, nc: nc, emb: emb, uploads: uploads, addr: ln.Addr().String(), dbURL: dbURL, config: config}
	e.URL = "http://" + e.addr
	e.start(t, ln)
	t.Cleanup(func() { e.stop() })
	return e
}

func (e *env) start(t testing.TB, ln net.Listener) {
	t.Helper()
	cfg := system.Config{Store: e.store, NATS: e.nc, Embedded: e.emb, Logger: slog.New(slog.DiscardHandler),
		Server:   server.Config{Uploads: e.uploads, DevAuth: true, ShutdownTimeout: time.Second, WebVersion: e.version},
		Relay:    streams.RelayConfig{PollInterval: 100 * time.Millisecond},
		Realtime: realtime.Config{Workers: 2}}
	for _, fn := range e.config {
		fn(&cfg)
	}
	sys, err := system.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("system: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sys.Run(ctx, ln) }()
	e.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the system: %v", err)
		}
	}
}

// restart stops everything but the database and NATS, runs during while it is down, and
// starts again on the same address.
func (e *env) restart(t testing.TB, during func()) {
	t.Helper()
	e.stop()
	during()
	ln, err := net.Listen("tcp", e.addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", e.addr, err)
	}
	e.start(t, ln)
}

// person is a signed-in human with a workspace membership.
type person struct {
	user  persist.User
	token string
}

func (e *env) person(t testing.TB, name string) person {
	t.Helper()
	u := persisttest.User(t, e.store, &persisttest.UserOpts{DisplayName: &name})
	return person{user: u, token: persisttest.Session(t, e.store, u.ID)}
}

// handled is person with a handle, so that others can @mention them.
func (e *env) handled(t testing.TB, name, handle string) person {
	t.Helper()
	u := persisttest.User(t, e.store, &persisttest.UserOpts{DisplayName: &name, Handle: &handle})
	return person{user: u, token: persisttest.Session(t, e.store, u.ID)}
}

// workspaceRef is what a test needs of a workspace it made. persist.Workspace is not it: its
// API shape is written by MarshalJSON, and route_id does not decode back into it.
type workspaceRef struct {
	ID      string `json:"id"`
	RouteID string `json:"route_id"`
}

// workspace creates a workspace owned by p.
func (e *env) workspace(t testing.TB, p person, name string) workspaceRef {
	t.Helper()
	var out struct{ Workspace workspaceRef }
	e.api(t, p, "POST", "/api/workspaces", map[string]string{"name": name}, &out)
	return out.Workspace
}

// channel creates a channel named name in workspace wsID as p.
func (e *env) channel(t testing.TB, p person, wsID, name string) persist.Channel {
	t.Helper()
	var out struct{ Channel persist.Channel }
	e.api(t, p, "POST", "/api/workspaces/"+wsID+"/channels", map[string]string{"name": name}, &out)
	return out.Channel
}

// api calls the API as p and decodes the answer into out (when not nil).
func (e *env) api(t testing.TB, p person, method, path string, body, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, e.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
	}
}

// findChromium returns the browser's path, or skips the test saying what to install.
func findChromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("NATTER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("browser tests skipped: no Chromium found (apt-get install chromium, or set NATTER_CHROMIUM)")
	return ""
}

// browser starts one headless Chromium for the test; each tab() is a separate browser context
// (its own cookies), as two people on two machines.
type browser struct {
	ctx  context.Context
	e    *env
	tabs int
}

func newBrowser(t testing.TB, e *env) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(findChromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-timer-throttling", true), chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true), chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 800),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{ctx: bctx, e: e}
}

// tab opens a page in a fresh browser context signed in as p (by the session cookie a
// magic-link sign-in would set) and loads the client.
func (b *browser) tab(t testing.TB, p person) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	host, _, _ := net.SplitHostPort(b.e.addr)
	set := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: "cc_session", Value: p.token,
			Domain: host, Path: "/", HTTPOnly: new(true)})
		return err
	})
	// The page's console goes to the test log when the test fails.
	var mu sync.Mutex
	var lines []string
	console := chromedp.Console(ctx)
	if err := chromedp.Do(ctx, set); err != nil {
		t.Fatalf("set the session cookie: %v", err)
	}
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			mu.Lock()
			lines = append(lines, fmt.Sprintf("%s:%d %s", m.URL, m.Line+1, m))
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("console of tab %d:\n%s", b.tabs, strings.Join(lines, "\n"))
		}
	})
	b.tabs++
	return ctx
}

// waitLimit bounds each browser step; generous, because CI runs every package at once on two
// cores, and a step that succeeds returns as soon as it does.
const waitLimit = 30 * time.Second

// do runs actions with a deadline, failing the test with what was being attempted.
func do(t testing.TB, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	if err := chromedp.Do(tctx, actions...); err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('.conv-header') || document.body).outerHTML.slice(0, 3000)`))
		t.Fatalf("%s: %v\nthe page's header:\n%s", what, err, page)
	}
}

// mouseClick is chromedp.Click (a real mouse press, where click calls the element's click())
// tried again while the page redraws the element between the query and the press: Chromium
// refuses the stale node before any mouse event is sent, so a retry cannot press twice. A live
// event (a reply count, a reaction) redraws a message at any moment.
func mouseClick(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		for {
			_, err := chromedp.Click(sel)(ctx, target)
			var stale *cdproto.Error
			if !errors.As(err, &stale) || stale.Message != "Could not find node with given id" {
				return err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s kept being redrawn: %w", sel, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
}

// eval evaluates a JavaScript expression on the page.
func eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	v, err := chromedp.Run(tctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// sidebarRow is a page expression for the sidebar's row of a channel or conversation (null
// while it is not drawn).
func sidebarRow(id string) string {
	return `document.querySelector('.sidebar a.place[data-place="` + id + `"]')`
}

// waitFor blocks until the page's expression is truthy.
func waitFor(t testing.TB, ctx context.Context, what, expr string) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	if _, err := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		seen, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('.list .msg')].map(m => m.className + ': ' + m.textContent).join('\n')`))
		t.Fatalf("waiting for %s: %v\nthe list shows:\n%s", what, err, seen)
	}
}

// shot saves a screenshot of the page when -screenshots is set.
func shot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	if *screenshots == "" {
		return
	}
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(*screenshots, name+".png"), buf, 0o644); err != nil {
		t.Fatalf("write screenshot: %v", err)
	}
}

// resize gives the tab a w×h window, as a phone's below 800 px wide.
func resize(t testing.TB, tab context.Context, w, h int64) {
	t.Helper()
	do(t, tab, fmt.Sprintf("a %d×%d window", w, h), chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: w, Height: h, DeviceScaleFactor: 1, Mobile: w < 800})
		return err
	}))
}
