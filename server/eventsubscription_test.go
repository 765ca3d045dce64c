package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// subscribe creates a subscription for the env's installation and returns its id and secret.
func (e *intEnv) subscribe(t *testing.T, inst, url string, types ...string) (string, string) {
	t.Helper()
	r := e.h.Post(t, e.wsPath("/event-subscriptions"), e.owner.Token, map[string]any{"app_installation_id": inst,
		"event_types": types, "callback_url": url})
	r.RequireStatus(t, http.StatusCreated)
	s := e.obj(t, r, "event_subscription")
	return s["id"].(string), s["signing_secret"].(string)
}

// attempt waits for the next stored delivery attempt of subscription id.
func (e *intEnv) attempt(t *testing.T, id string) persist.EventDeliveryAttempt {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case a := <-e.h.DeliveryAttempts:
			if a.SubscriptionID == id {
				return a
			}
		case <-deadline:
			t.Fatalf("no delivery attempt for %s", id)
		}
	}
}

func (e *intEnv) post(t *testing.T, path, token, body string) map[string]any {
	t.Helper()
	r := e.h.Post(t, path, token, map[string]any{"body": body})
	r.RequireStatus(t, http.StatusCreated)
	return e.obj(t, r, "message")
}

func TestEventSubscriptionManagement(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t)
	inst, botToken := e.install(t, nil)
	for _, types := range [][]string{{"message.created", "message.exploded"}, {}, {"message.*"}} {
		r := e.h.Post(t, e.wsPath("/event-subscriptions"), e.owner.Token, map[string]any{"app_installation_id": inst,
			"event_types": types, "callback_url": "https://hooks.example.com/x"})
		r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	}
	e.h.Post(t, e.wsPath("/event-subscriptions"), e.owner.Token, map[string]any{"event_types": []string{"*"},
		"callback_url": "https://hooks.example.com/x"}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	e.h.Post(t, e.wsPath("/event-subscriptions"), botToken, map[string]any{"app_installation_id": inst,
		"event_types": []string{"*"}, "callback_url": "https://hooks.example.com/x"}).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)

	id, secret := e.subscribe(t, inst, "https://hooks.example.com/x", "message.created", "reaction.added", "message.created")
	r := e.h.Get(t, e.wsPath("/event-subscriptions"), e.join(t, persist.RoleMember).Token)
	r.RequireStatus(t, http.StatusOK)
	require.NotContains(t, string(r.Body), secret)
	list := r.JSON(t)["event_subscriptions"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, []any{"message.created", "reaction.added"}, list[0].(map[string]any)["event_types"])

	r = e.h.Post(t, "/api/event-subscriptions/"+id+"/rotate-secret", e.owner.Token, nil)
	r.RequireStatus(t, http.StatusOK)
	require.NotEqual(t, secret, e.obj(t, r, "event_subscription")["signing_secret"])
	e.h.Post(t, "/api/event-subscriptions/"+id+"/revoke", e.join(t, persist.RoleModerator).Token, nil).RequireStatus(t, http.StatusOK)
	e.h.Post(t, "/api/event-subscriptions/"+id+"/rotate-secret", e.owner.Token, nil).
		RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	require.Empty(t, e.h.Get(t, e.wsPath("/event-subscriptions"), e.owner.Token).JSON(t)["event_subscriptions"])
}

func TestEventTypes(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t)
	_, token := persisttest.Bot(t, e.h.Store, e.owner.User, e.ws.ID, &persisttest.BotOpts{Scopes: []string{persist.ScopeProfileRead}})
	for _, tok := range []string{e.owner.Token, token.Token} {
		r := e.h.Get(t, "/api/event-types", tok)
		r.RequireStatus(t, http.StatusOK)
		var body struct {
			EventTypes []string `json:"event_types"`
		}
		r.Decode(t, &body)
		require.Equal(t, persist.EventTypes, body.EventTypes)
		require.Contains(t, body.EventTypes, "message.created")
		require.Contains(t, body.EventTypes, "workspace.ownership_transferred")
	}
	e.h.Get(t, "/api/event-types", "").RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
}

// TestEventSubscriptionDelivery: a subscription receives exactly the events it subscribed to
// and its bot may see, signed, as {subscription_id, event}; every attempt is listed.
func TestEventSubscriptionDelivery(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t)
	general := persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")
	member := e.join(t, persist.RoleMember)
	private := persisttest.DM(t, e.h.Store, e.ws.ID, e.owner.User.ID, member.User.ID)
	withBot := persisttest.DM(t, e.h.Store, e.ws.ID, e.owner.User.ID, e.bot.ID)
	inst, _ := e.install(t, nil)
	recv := newHook(t, func(w http.ResponseWriter, _ []byte) { _, _ = w.Write([]byte("thanks")) })
	id, secret := e.subscribe(t, inst, recv.srv.URL+"/events", "message.created")
	recv.setSecret(secret)

	first := e.post(t, "/api/channels/"+general.ID+"/messages", e.owner.Token, "hello channel")
	e.h.Post(t, "/api/messages/"+first["id"].(string)+"/reactions", e.owner.Token, map[string]any{"emoji": "👍"}).
		RequireStatus(t, http.StatusCreated)
	e.post(t, "/api/dms/"+private+"/messages", e.owner.Token, "not for bots")
	last := e.post(t, "/api/dms/"+withBot+"/messages", e.owner.Token, "hello bot")

	// Deliveries come one at a time in cursor order, so the DM the bot is not in would have
	// arrived between these two.
	var delivered []map[string]any
	for _, want := range []map[string]any{first, last} {
		call := recv.next(t)
		body := decodeMap(t, call.body)
		require.Equal(t, id, body["subscription_id"])
		ev := body["event"].(map[string]any)
		require.Equal(t, "message.created", ev["type"])
		require.Equal(t, want["id"], ev["message_id"])
		require.Equal(t, ev["id"], call.header.Get(outbound.HeaderEventID))
		delivered = append(delivered, ev)
	}
	a1, a2 := e.attempt(t, id), e.attempt(t, id)
	require.Empty(t, recv.got)
	require.Equal(t, delivered[0]["id"], a1.EventID)
	require.Equal(t, 200, a2.ResponseStatus)
	require.Equal(t, "thanks", a2.ResponseBody)
	require.Equal(t, 1, a2.Attempt)

	// Listing: newest first, paged by attempt id.
	path := "/api/event-subscriptions/" + id + "/deliveries"
	r := e.h.Get(t, path, e.owner.Token)
	r.RequireStatus(t, http.StatusOK)
	var page struct {
		Deliveries []persist.EventDeliveryAttempt `json:"deliveries"`
		NextCursor *string                        `json:"next_cursor"`
	}
	r.Decode(t, &page)
	require.Len(t, page.Deliveries, 2)
	require.Equal(t, a2.ID, page.Deliveries[0].ID)
	require.Nil(t, page.NextCursor)
	require.Contains(t, string(r.Body), `"next_cursor":null`)
	e.h.Get(t, path+"?limit=1", e.owner.Token).Decode(t, &page)
	require.Equal(t, []string{a2.ID}, []string{page.Deliveries[0].ID})
	require.Equal(t, a2.ID, *page.NextCursor)
	e.h.Get(t, path+"?limit=1&before="+*page.NextCursor, e.owner.Token).Decode(t, &page)
	require.Equal(t, a1.ID, page.Deliveries[0].ID)
	require.Nil(t, page.NextCursor)
	for _, q := range []string{"?limit=0", "?limit=x", "?before=eda_unknown"} {
		e.h.Get(t, path+q, e.owner.Token).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	}
	e.h.Get(t, path+"?limit=201", e.owner.Token).Decode(t, &page)
	require.Len(t, page.Deliveries, 2, "a limit above 200 reads as 200")

	// Who may read them (SPEC §Integrations rule 1: human members may list): a member, not a
	// waiting-room guest, not someone of another workspace.
	e.h.Get(t, path, member.Token).Decode(t, &page)
	require.Len(t, page.Deliveries, 2, "a member reads the attempts")
	e.h.Get(t, path, e.join(t, persist.RoleGuest).Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	e.h.Get(t, path, e.h.NewUser(t).Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)

	// Retention: pruning the events removes their attempts, and a cursor naming one is 400.
	ctx := context.Background()
	_, err := persist.WithTxV(ctx, e.h.Store, func(tx *persist.Tx) (persist.EventPruneResult, error) {
		return tx.EventPrune(ctx, e.ws.ID, persist.EventPruneParams{KeepLatest: persisttest.Ptr(int64(0))})
	})
	require.NoError(t, err)
	r = e.h.Get(t, path+"?before="+a2.ID, e.owner.Token)
	r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	require.Contains(t, r.JSON(t)["error"], "retention")
	require.Empty(t, e.h.Get(t, path, e.owner.Token).JSON(t)["deliveries"])
}

// TestEventSubscriptionFailuresAreNotRetried: a failed delivery is stored and the next event
// follows; the failed one is never sent again.
func TestEventSubscriptionFailuresAreNotRetried(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t)
	general := persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")
	inst, _ := e.install(t, nil)
	fail := make(chan bool, 2)
	fail <- true
	fail <- false
	recv := newHook(t, func(w http.ResponseWriter, _ []byte) {
		if <-fail {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte("boom"))
		}
	})
	id, secret := e.subscribe(t, inst, recv.srv.URL, "*")
	recv.setSecret(secret)
	m1 := e.post(t, "/api/channels/"+general.ID+"/messages", e.owner.Token, "one")
	m2 := e.post(t, "/api/channels/"+general.ID+"/messages", e.owner.Token, "two")
	for _, want := range []map[string]any{m1, m2} {
		ev := decodeMap(t, recv.next(t).body)["event"].(map[string]any)
		require.Equal(t, want["id"], ev["message_id"])
	}
	failed, ok := e.attempt(t, id), e.attempt(t, id)
	require.Equal(t, 500, failed.ResponseStatus)
	require.Equal(t, "boom", failed.ResponseBody)
	require.Contains(t, failed.Error, "500")
	require.Equal(t, 200, ok.ResponseStatus)
	require.Empty(t, ok.Error)
	require.Empty(t, recv.got)
}

// TestEventSubscriptionStrictPolicy: under the production policy a loopback callback is never
// called, and the refusal's class is stored as the attempt's error.
func TestEventSubscriptionStrictPolicy(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t, servertest.WithCallbackPolicy(outbound.PublicOnly))
	general := persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")
	inst, _ := e.install(t, nil)
	recv := newHook(t, nil)
	id, _ := e.subscribe(t, inst, recv.srv.URL, "*")
	e.post(t, "/api/channels/"+general.ID+"/messages", e.owner.Token, "ssrf?")
	a := e.attempt(t, id)
	require.Equal(t, 0, a.ResponseStatus)
	// Managers read the attempt: one fixed sentence, never what the name resolved to.
	require.Equal(t, "its address is not allowed: callbacks go only to public addresses over http(s)", a.Error)
	require.Empty(t, recv.got)
	raw, err := json.Marshal(a)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "response_body")
	require.NotContains(t, string(raw), "127.0.0.1")
}
