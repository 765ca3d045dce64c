// Package servertest runs the system natter serve runs (system.New: the router, the relay, the
// hub, bot access, the consumers) on a loopback listener over a fresh database and a real
// embedded NATS, with helpers to act as a given user. Only _test.go files import it.
package servertest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime"
	"github.com/natterchat/natter/realtime/delivery"
	"github.com/natterchat/natter/realtime/mailer"
	"github.com/natterchat/natter/realtime/push"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/server/blob"
	"github.com/natterchat/natter/streams"
	"github.com/natterchat/natter/streams/streamstest"
	"github.com/natterchat/natter/system"
)

// Harness is one test's running API.
type Harness struct {
	Store  *persist.Store
	Server *server.Server
	NATS   *nats.Conn
	Embed  *streams.Embedded
	// Hub and Relay run for the test: committed events reach sockets.
	Hub   *realtime.Hub
	Relay *streams.Relay
	// Push is the web push deliverer, running when the harness was built WithWebPush.
	Push *push.Deliverer
	// System is the whole assembly the fields above belong to, as natter serve runs it.
	System *system.System
	// Uploads is the upload store, a directory of the test's.
	Uploads *blob.Disk
	// URL is the base URL of the API, on 127.0.0.1: requests from the test are local.
	URL string
	// DeliveryAttempts receives each event-subscription delivery attempt once it is stored
	// (buffered; attempts beyond the buffer are dropped).
	DeliveryAttempts <-chan persist.EventDeliveryAttempt
	client           *http.Client
}

// Option adjusts the harness.
type Option func(*options)

type options struct {
	config    func(*server.Config)
	realtime  func(*realtime.Config)
	bots      func(*streams.BotAccessConfig)
	allowAddr func(netip.Addr) bool
	storeOpts []persisttest.Option
	push      func(*push.Config)
	relay     func(*streams.RelayConfig)
	mail      func(*mailer.Config)
	delivery  func(*delivery.Config)
}

// WithWebPush gives the server a push key pair and runs the web push deliverer, whose
// configuration fn may edit (nil: defaults). Push services on loopback addresses are allowed,
// for registration and for sending, since tests run them on httptest listeners.
func WithWebPush(fn func(*push.Config)) Option {
	return func(o *options) {
		o.push = func(c *push.Config) {
			if fn != nil {
				fn(c)
			}
		}
	}
}

// WithMailer edits the missed-activity email deliverer's configuration, which runs when the
// server's configuration (WithConfig) sets Mail. Its sender looks for due batches every 50ms.
func WithMailer(fn func(*mailer.Config)) Option { return func(o *options) { o.mail = fn } }

// WithCallbackPolicy replaces the address policy of outgoing callbacks, which by default admits
// public addresses and loopback (the tests' receivers); pass outbound.PublicOnly for the
// production policy.
func WithCallbackPolicy(allow func(netip.Addr) bool) Option {
	return func(o *options) { o.allowAddr = allow }
}

// WithBotAccess edits the configuration of bots' NATS access.
func WithBotAccess(fn func(*streams.BotAccessConfig)) Option { return func(o *options) { o.bots = fn } }

// WithRelay edits the relay's configuration.
func WithRelay(fn func(*streams.RelayConfig)) Option { return func(o *options) { o.relay = fn } }

// WithDelivery edits the event-subscription deliverer's configuration. By default it matches
// consumers to subscriptions every second (natter serve's default); a test that waits for a new
// subscription's deliveries asks for a shorter SyncInterval here. Each sync is a transaction,
// and at 50ms in every harness the idle polling was a sixth of the server tests' CPU.
func WithDelivery(fn func(*delivery.Config)) Option { return func(o *options) { o.delivery = fn } }

// WithRealtime edits the realtime hub's configuration.
func WithRealtime(fn func(*realtime.Config)) Option { return func(o *options) { o.realtime = fn } }

// WithConfig edits the server configuration before the server is built.
func WithConfig(fn func(*server.Config)) Option { return func(o *options) { o.config = fn } }

// WithStoreOptions passes options to the test store.
// WithClock pins the store's (and so the server's) clock to c.
func WithClock(c *persisttest.Clock) Option { return WithStoreOptions(persisttest.WithClock(c.Now)) }

func WithStoreOptions(opts ...persisttest.Option) Option {
	return func(o *options) { o.storeOpts = append(o.storeOpts, opts...) }
}

// New starts a harness for t.
func New(t testing.TB, opts ...Option) *Harness {
	t.Helper()
	o := &options{}
	for _, opt := range opts {
		opt(o)
	}
	emb, nc := streamstest.Embedded(t)
	wired := func(c *persist.Config) { *c = streams.StoreConfig(nc, *c) }
	store := persisttest.NewStore(t, append([]persisttest.Option{wired}, o.storeOpts...)...)
	uploads, err := blob.NewDisk(t.TempDir())
	if err != nil {
		t.Fatalf("uploads: %v", err)
	}
	if o.allowAddr == nil {
		o.allowAddr = outbound.PublicOrLoopback
	}
	attempts := make(chan persist.EventDeliveryAttempt, 1024)
	cfg := system.Config{Store: store, NATS: nc, Embedded: emb, Logger: slog.New(slog.DiscardHandler),
		// Tests act as people through the loopback impersonation header, as `natter dev` allows.
		Server:    server.Config{Uploads: uploads, LocalImpersonation: true},
		Relay:     streams.RelayConfig{PollInterval: 100 * time.Millisecond},
		Realtime:  realtime.Config{Workers: 4, SweepInterval: 50 * time.Millisecond},
		Callbacks: outbound.CallbackConfig{AllowAddr: o.allowAddr, Timeout: 10 * time.Second},
		Delivery: delivery.Config{OnAttempt: func(a persist.EventDeliveryAttempt) {
			select {
			case attempts <- a:
			default:
			}
		}},
	}
	if o.push != nil {
		cfg.Push = &push.Config{Policy: outbound.PublicOrLoopback, DiscoverInterval: 50 * time.Millisecond}
		o.push(cfg.Push)
		cfg.Server.PushPolicy = outbound.PublicOrLoopback
	}
	cfg.Mail = mailer.Config{DiscoverInterval: 50 * time.Millisecond, PollInterval: 50 * time.Millisecond}
	if o.mail != nil {
		o.mail(&cfg.Mail)
	}
	if o.relay != nil {
		o.relay(&cfg.Relay)
	}
	if o.realtime != nil {
		o.realtime(&cfg.Realtime)
	}
	if o.delivery != nil {
		o.delivery(&cfg.Delivery)
	}
	if o.bots != nil {
		o.bots(&cfg.Bots)
	}
	if o.config != nil {
		o.config(&cfg.Server)
	}
	sys, err := system.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("system: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sys.Run(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the system: %v", err)
		}
	})
	select {
	case <-sys.Bots.Ready():
	case <-time.After(10 * time.Second):
		t.Fatalf("bot access did not start")
	}
	return &Harness{Store: store, Server: sys.Server, NATS: nc, Embed: emb, Hub: sys.Hub, Relay: sys.Relay, Push: sys.Push,
		Uploads: uploads, System: sys, URL: "http://" + ln.Addr().String(), DeliveryAttempts: attempts, client: &http.Client{
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}}
}

// Actor is a signed-in human with a real session token.
type Actor struct {
	User  persist.User
	Token string
}

// NewUser creates a human and signs them in.
func (h *Harness) NewUser(t testing.TB) Actor {
	t.Helper()
	u := persisttest.User(t, h.Store, nil)
	return Actor{User: u, Token: persisttest.Session(t, h.Store, u.ID)}
}

// Events returns a workspace's logged events, oldest first; with types, only those types.
func (h *Harness) Events(t testing.TB, workspaceID string, types ...string) []persist.Event {
	t.Helper()
	ctx := context.Background()
	all, err := persist.WithTxV(ctx, h.Store, func(tx *persist.Tx) ([]persist.Event, error) {
		return tx.EventListAfter(ctx, workspaceID, 0, 100000)
	})
	if err != nil {
		t.Fatalf("read the event log: %v", err)
	}
	if len(types) == 0 {
		return all
	}
	var out []persist.Event
	for _, e := range all {
		if slices.Contains(types, e.Type) {
			out = append(out, e)
		}
	}
	return out
}

// Request is one call; the zero value of each field means "none".
type Request struct {
	Method string
	Path   string
	// Body is marshalled to JSON unless it is a string, []byte or io.Reader, which are sent as
	// they are.
	Body    any
	Token   string
	Header  map[string]string
	Cookies []*http.Cookie
	// From is the address the request comes from: a loopback IP other than the default
	// 127.0.0.1 (Linux routes all of 127.0.0.0/8 to the loopback interface), so that tests of
	// per-address rules can play several clients.
	From string
}

// Response is what came back.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends req and reads the whole response.
func (h *Harness) Do(t testing.TB, req Request) *Response {
	t.Helper()
	var body io.Reader
	switch b := req.Body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	case io.Reader:
		body = b
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("marshal body: %v", err)
		}
		body = bytes.NewReader(raw)
	}
	hr, err := http.NewRequest(req.Method, h.URL+req.Path, body)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if req.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+req.Token)
	}
	for k, v := range req.Header {
		if strings.EqualFold(k, "Host") {
			hr.Host = v
			continue
		}
		hr.Header.Set(k, v)
	}
	for _, c := range req.Cookies {
		hr.AddCookie(c)
	}
	client := h.client
	if req.From != "" {
		ip := net.ParseIP(req.From)
		if ip == nil || !ip.IsLoopback() {
			t.Fatalf("From %q: want a loopback IP", req.From)
		}
		tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}).DialContext}
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr, CheckRedirect: h.client.CheckRedirect}
	}
	resp, err := client.Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.Path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// Get is Do for a GET as token.
func (h *Harness) Get(t testing.TB, path, token string) *Response {
	t.Helper()
	return h.Do(t, Request{Method: http.MethodGet, Path: path, Token: token})
}

// Post is Do for a POST of a JSON body as token.
func (h *Harness) Post(t testing.TB, path, token string, body any) *Response {
	t.Helper()
	return h.Do(t, Request{Method: http.MethodPost, Path: path, Token: token, Body: body})
}

// Metric sums the samples of GET /metrics (the server needs Config.Metrics) whose line starts
// with prefix: a metric's name and, to narrow it, the first of its labels, as in
// `natter_http_requests_total{route="/api/me",`.
func (h *Harness) Metric(t testing.TB, prefix string) int {
	t.Helper()
	r := h.Get(t, "/metrics", "")
	r.RequireStatus(t, http.StatusOK)
	total := 0
	for _, line := range strings.Split(string(r.Body), "\n") {
		if strings.HasPrefix(line, prefix) {
			n, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			total += int(n)
		}
	}
	return total
}

// JSON decodes the body into a generic map.
func (r *Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// Decode decodes the body into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode response: %v: %s", err, r.Body)
	}
}

// RequireError checks status and error code of an error response, and the error body shape.
func (r *Response) RequireError(t testing.TB, status int, code persist.Code) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %d, want %d: %s", r.Status, status, r.Body)
	}
	m := r.JSON(t)
	if m["code"] != string(code) {
		t.Fatalf("code = %v, want %s: %s", m["code"], code, r.Body)
	}
	if msg, _ := m["error"].(string); msg == "" {
		t.Fatalf("error message missing: %s", r.Body)
	}
}

// RequireStatus fails unless the status is status.
func (r *Response) RequireStatus(t testing.TB, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %d, want %d: %s", r.Status, status, r.Body)
	}
}
