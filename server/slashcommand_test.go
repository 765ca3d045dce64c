package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// register registers command against url for the env's installation and returns its id and
// signing secret.
func (e *intEnv) register(t *testing.T, inst, command, url string) (string, string) {
	t.Helper()
	r := e.h.Post(t, e.wsPath("/slash-commands"), e.owner.Token, map[string]any{"app_installation_id": inst,
		"command": command, "description": "Deploy things", "callback_url": url})
	r.RequireStatus(t, http.StatusCreated)
	c := e.obj(t, r, "slash_command")
	return c["id"].(string), c["signing_secret"].(string)
}

// slash invokes the slash hook in channelID as token with a form body.
func (e *intEnv) slash(t *testing.T, channelID, token, command, text string) *servertest.Response {
	t.Helper()
	form := url.Values{"command": {command}, "text": {text}}.Encode()
	return e.h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/hooks/slash/" + channelID, Token: token,
		Body: form, Header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}})
}

// invocation reads the stored callback outcome of an invocation by its trigger_id.
func (e *intEnv) invocation(t *testing.T, triggerID string) persist.SlashCallbackOutcome {
	t.Helper()
	return persisttest.SlashInvocationOutcome(t, e.h.Store, triggerID)
}

func TestSlashCommandRegistration(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t)
	inst, botToken := e.install(t, nil)
	id, secret := e.register(t, inst, "/Deploy", "https://hooks.example.com/deploy")
	require.True(t, strings.HasPrefix(secret, persist.PrefixSigningSecret))

	r := e.h.Get(t, e.wsPath("/slash-commands"), e.join(t, persist.RoleMember).Token)
	r.RequireStatus(t, http.StatusOK)
	require.NotContains(t, string(r.Body), secret)
	list := r.JSON(t)["slash_commands"].([]any)
	require.Len(t, list, 1)
	c := list[0].(map[string]any)
	require.Equal(t, "/deploy", c["command"])
	require.Equal(t, e.bot.ID, c["bot_user_id"], "the installation's bot by default")
	require.NotContains(t, c, "signing_secret")

	// One active registration per name.
	e.h.Post(t, e.wsPath("/slash-commands"), e.owner.Token, map[string]any{"command": "deploy", "bot_user_id": e.bot.ID,
		"callback_url": "https://hooks.example.com/2"}).RequireError(t, http.StatusConflict, persist.CodeConflict)
	for _, body := range []map[string]any{
		{"command": "/x", "bot_user_id": e.owner.User.ID, "callback_url": "https://hooks.example.com/"},
		{"command": "/x", "bot_user_id": e.bot.ID, "callback_url": "ftp://hooks.example.com/"},
		{"command": "/x y", "bot_user_id": e.bot.ID, "callback_url": "https://hooks.example.com/"},
		{"command": "/x", "app_installation_id": "app_nope", "callback_url": "https://hooks.example.com/"},
	} {
		e.h.Post(t, e.wsPath("/slash-commands"), e.owner.Token, body).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	}
	// Bot tokens and plain members cannot mutate.
	e.h.Post(t, "/api/slash-commands/"+id+"/rotate-secret", botToken, nil).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
	e.h.Post(t, "/api/slash-commands/"+id+"/revoke", e.join(t, persist.RoleMember).Token, nil).
		RequireError(t, http.StatusForbidden, persist.CodeForbidden)

	r = e.h.Post(t, "/api/slash-commands/"+id+"/rotate-secret", e.owner.Token, nil)
	r.RequireStatus(t, http.StatusOK)
	rotated := e.obj(t, r, "slash_command")["signing_secret"].(string)
	require.NotEqual(t, secret, rotated)

	r = e.h.Post(t, "/api/slash-commands/"+id+"/revoke", e.owner.Token, nil)
	r.RequireStatus(t, http.StatusOK)
	require.NotNil(t, e.obj(t, r, "slash_command")["revoked_at"])
	e.h.Post(t, "/api/slash-commands/"+id+"/rotate-secret", e.owner.Token, nil).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	require.Empty(t, e.h.Get(t, e.wsPath("/slash-commands"), e.owner.Token).JSON(t)["slash_commands"])
	// The name is free again.
	e.register(t, inst, "/deploy", "https://hooks.example.com/deploy")
}

func TestSlashCommandRoundTrip(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t)
	general := persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")
	inst, _ := e.install(t, nil)
	recv := newHook(t, func(w http.ResponseWriter, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"text":"deploying **main**"}`))
	})
	id, secret := e.register(t, inst, "/deploy", recv.srv.URL+"/slash")
	recv.setSecret(secret)
	member := e.join(t, persist.RoleMember)

	r := e.slash(t, general.ID, member.Token, "/DEPLOY", "main now")
	r.RequireStatus(t, http.StatusCreated)
	call := recv.next(t)
	require.Equal(t, "application/json", call.header.Get("Content-Type"))
	payload := decodeMap(t, call.body)
	require.Equal(t, id, payload["command_id"])
	require.Equal(t, "/deploy", payload["command"])
	require.Equal(t, "main now", payload["text"])
	require.Equal(t, e.ws.ID, payload["workspace_id"])
	require.Equal(t, general.ID, payload["channel_id"])
	require.Equal(t, member.User.ID, payload["user_id"])
	require.Equal(t, e.bot.ID, payload["bot_user_id"])
	require.NotEmpty(t, payload["trigger_id"])
	require.Equal(t, persist.SlashCallbackOutcome{Status: 200, Body: `{"text":"deploying **main**"}`},
		e.invocation(t, payload["trigger_id"].(string)), "the invocation's callback outcome is stored")

	out := r.JSON(t)
	require.Equal(t, "in_channel", out["response_type"], "the default response type")
	require.Equal(t, "deploying **main**", out["text"])
	msg := out["message"].(map[string]any)
	require.Equal(t, e.bot.ID, msg["author_id"], "the reply is posted as the command's bot")
	require.Equal(t, "deploying **main**", msg["body"])
	require.Equal(t, general.ID, msg["channel_id"])
	event := out["event"].(map[string]any)
	require.Equal(t, "message.created", event["type"])
	require.Equal(t, r.Header.Get("X-Correlation-ID"), event["payload"].(map[string]any)["correlation_id"],
		"the bot's reply carries the invoking request's correlation id")
	require.Equal(t, e.bot.ID, event["payload"].(map[string]any)["author_id"])
	created := e.eventsOf(t, "message.created")
	require.Equal(t, e.bot.ID, created[len(created)-1].ActorID)
}

func TestSlashCommandReplies(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t)
	general := persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")
	inst, _ := e.install(t, nil)

	t.Run("EphemeralIsNotPosted", func(t *testing.T) {
		t.Parallel()
		recv := newHook(t, func(w http.ResponseWriter, _ []byte) {
			_, _ = w.Write([]byte(`{"response_type":"ephemeral","text":"only you"}`))
		})
		_, secret := e.register(t, inst, "/whisper", recv.srv.URL)
		recv.setSecret(secret)
		// A channel of its own: the siblings post into general while this one counts.
		quiet := persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "whisper-room")
		r := e.slash(t, quiet.ID, e.owner.Token, "/whisper", "")
		r.RequireStatus(t, http.StatusCreated)
		recv.next(t)
		require.Equal(t, map[string]any{"response_type": "ephemeral", "text": "only you"}, r.JSON(t))
		for _, ev := range e.eventsOf(t, "message.created") {
			require.NotEqual(t, quiet.ID, ev.ChannelID, "an ephemeral answer was posted")
		}
		require.Empty(t, pageOf(t, e.h.Get(t, "/api/channels/"+quiet.ID+"/messages", e.owner.Token)).Messages)
	})
	t.Run("FailingCallbackIs502", func(t *testing.T) {
		t.Parallel()
		recv := newHook(t, func(w http.ResponseWriter, _ []byte) { w.WriteHeader(http.StatusInternalServerError) })
		_, secret := e.register(t, inst, "/broken", recv.srv.URL)
		recv.setSecret(secret)
		e.slash(t, general.ID, e.owner.Token, "/broken", "x").RequireError(t, http.StatusBadGateway, persist.CodeCallbackFailed)
		trigger := decodeMap(t, recv.next(t).body)["trigger_id"].(string)
		o := e.invocation(t, trigger)
		require.Equal(t, 500, o.Status)
		require.Contains(t, o.Error, "500")
	})
	t.Run("UnregisteredPostsTheTextAsTheCaller", func(t *testing.T) {
		t.Parallel()
		r := e.slash(t, general.ID, e.owner.Token, " /shrug ", "  meh  ")
		r.RequireStatus(t, http.StatusCreated)
		out := r.JSON(t)
		require.Equal(t, "in_channel", out["response_type"])
		require.Equal(t, "/shrug meh", out["text"])
		msg := out["message"].(map[string]any)
		require.Equal(t, "/shrug meh", msg["body"])
		require.Equal(t, e.owner.User.ID, msg["author_id"])
		require.Equal(t, "message.created", out["event"].(map[string]any)["type"])
	})
	t.Run("NeedsACommand", func(t *testing.T) {
		t.Parallel()
		e.slash(t, general.ID, e.owner.Token, "", "x").RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})
}

// TestSlashCommandWriteAuthority: invoking needs the caller's current write authority for the
// exact channel, and each persisted invocation spends one post of a guest's budget even when its
// callback fails.
func TestSlashCommandWriteAuthority(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t)
	ownerActor := persist.ActorFor(e.owner.User)
	guestRoom := persisttest.Channel(t, e.h.Store, ownerActor, e.ws.ID, persist.GuestChannel)
	general := persisttest.Channel(t, e.h.Store, ownerActor, e.ws.ID, "general")
	inst, _ := e.install(t, nil)
	recv := newHook(t, func(w http.ResponseWriter, _ []byte) { w.WriteHeader(http.StatusServiceUnavailable) })
	_, secret := e.register(t, inst, "/ping", recv.srv.URL)
	recv.setSecret(secret)

	guest := e.join(t, persist.RoleGuest)
	e.slash(t, general.ID, guest.Token, "/ping", "").RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	for range 3 { // SPEC §Limits: guest posting 3 a day; each invocation spends one
		e.slash(t, guestRoom.ID, guest.Token, "/ping", "").RequireError(t, http.StatusBadGateway, persist.CodeCallbackFailed)
		recv.next(t)
	}
	e.slash(t, guestRoom.ID, guest.Token, "/ping", "").RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
	e.h.Post(t, "/api/channels/"+guestRoom.ID+"/messages", guest.Token, map[string]any{"body": "hi"}).
		RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
	require.Empty(t, recv.got, "no callback without write authority")

	blocked := e.join(t, persist.RoleMember)
	e.patch(t, e.wsPath("/moderation/members/"+blocked.User.ID), e.owner.Token, map[string]any{"blocked": true}).
		RequireStatus(t, http.StatusOK)
	e.slash(t, general.ID, blocked.Token, "/ping", "").RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	require.Empty(t, recv.got)
}

// TestSlashCommandStrictPolicy runs the production address policy: a callback on loopback is
// refused, never called, and the refusal is stored as the invocation's error.
func TestSlashCommandStrictPolicy(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t, servertest.WithCallbackPolicy(outbound.PublicOnly))
	general := persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")
	inst, _ := e.install(t, nil)
	recv := newHook(t, nil)
	u, err := url.Parse(recv.srv.URL)
	require.NoError(t, err)
	e.register(t, inst, "/ssrf", recv.srv.URL)
	e.register(t, inst, "/metadata", "http://169.254.169.254/latest/meta-data")
	e.register(t, inst, "/named", "http://localhost:"+u.Port()+"/hook")
	for _, c := range []string{"/ssrf", "/metadata", "/named"} {
		r := e.slash(t, general.ID, e.owner.Token, c, "")
		r.RequireError(t, http.StatusBadGateway, persist.CodeCallbackFailed)
		// One fixed sentence for the class; what the name resolved to stays on the server.
		require.Equal(t, "the command's callback failed: its address is not allowed: callbacks go only to public addresses over http(s)",
			r.JSON(t)["error"])
		for _, leak := range []string{"127.0.0.1", "::1", "169.254", "localhost", "resolves"} {
			require.NotContains(t, string(r.Body), leak)
		}
	}
	require.Empty(t, recv.got)
}

// TestSlashCommandFailureClasses: each class of callback failure answers 502 with its fixed
// sentence and no address; the stored invocation keeps the detail.
func TestSlashCommandFailureClasses(t *testing.T) {
	t.Parallel()
	e := newIntEnv(t)
	general := persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")
	inst, _ := e.install(t, nil)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close() // nothing listens there any more
	failing := newHook(t, func(w http.ResponseWriter, _ []byte) { w.WriteHeader(http.StatusInternalServerError) })
	e.register(t, inst, "/gone", closedURL)
	e.register(t, inst, "/broken", failing.srv.URL)
	for _, tc := range []struct{ command, sentence string }{
		{"/gone", "the command's callback failed: it could not be reached"},
		{"/broken", "the command's callback failed: it answered HTTP 500"},
	} {
		r := e.slash(t, general.ID, e.owner.Token, tc.command, "")
		r.RequireError(t, http.StatusBadGateway, persist.CodeCallbackFailed)
		require.Equal(t, tc.sentence, r.JSON(t)["error"])
		require.NotContains(t, string(r.Body), "127.0.0.1")
	}
	call := <-failing.got
	var payload struct {
		TriggerID string `json:"trigger_id"`
	}
	require.NoError(t, json.Unmarshal(call.body, &payload))
	require.Equal(t, persist.SlashCallbackOutcome{Status: 500, Error: "the callback answered HTTP 500"}, e.invocation(t, payload.TriggerID))
}
