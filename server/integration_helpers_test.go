package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/delivery"
)

// intEnv is a workspace with its owner and a service bot member, for the integration tests.
type intEnv struct {
	*wsEnv
	bot persist.User
}

func newIntEnv(t *testing.T, opts ...servertest.Option) *intEnv {
	t.Helper()
	// Subscriptions made here are waited on: their consumers start within 50ms, not a second.
	fast := servertest.WithDelivery(func(c *delivery.Config) { c.SyncInterval = 50 * time.Millisecond })
	h := servertest.New(t, append([]servertest.Option{fast}, opts...)...)
	owner := h.NewUser(t)
	e := &wsEnv{h: h, owner: owner, ws: persisttest.Workspace(t, h.Store, owner.User.ID)}
	bot, _ := persisttest.Bot(t, h.Store, owner.User, e.ws.ID, nil)
	return &intEnv{wsEnv: e, bot: bot}
}

// install installs an app through the env's bot and returns the installation's id and its bot
// token.
func (e *intEnv) install(t *testing.T, body map[string]any) (string, string) {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	body["app_slug"] = "acme"
	if _, ok := body["bot_user_id"]; !ok {
		body["bot_user_id"] = e.bot.ID
	}
	r := e.h.Post(t, e.wsPath("/app-installations"), e.owner.Token, body)
	r.RequireStatus(t, http.StatusCreated)
	return e.obj(t, r, "app_installation")["id"].(string), e.obj(t, r, "bot_token")["token"].(string)
}

// hook is a real HTTP receiver on 127.0.0.1 that verifies each request's signature with the
// secret it is told and passes the request on.
type hook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	answer func(w http.ResponseWriter, body []byte)
	got    chan hookCall
}

type hookCall struct {
	header   http.Header
	body     []byte
	verified bool
}

func newHook(t *testing.T, answer func(w http.ResponseWriter, body []byte)) *hook {
	t.Helper()
	h := &hook{answer: answer, got: make(chan hookCall, 64)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		secret := h.secret
		h.mu.Unlock()
		ok := outbound.Verify(secret, r.Header.Get(outbound.HeaderTimestamp), body, r.Header.Get(outbound.HeaderSignature))
		h.got <- hookCall{header: r.Header.Clone(), body: body, verified: ok}
		if h.answer != nil {
			h.answer(w, body)
		}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) setSecret(s string) {
	h.mu.Lock()
	h.secret = s
	h.mu.Unlock()
}

// next returns the next call, waiting up to 10 s.
func (h *hook) next(t *testing.T) hookCall {
	t.Helper()
	select {
	case c := <-h.got:
		require.True(t, c.verified, "the signature does not verify: %s", c.body)
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("the receiver was not called")
		return hookCall{}
	}
}

func decodeMap(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), string(raw))
	return m
}
