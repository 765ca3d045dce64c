package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams/streamstest"
)

// privateWorld is a workspace with a private channel (#incidents, created by member, who added
// memberBot) and a public one (#general), the people and bots around it, and a message with a
// file in the private channel.
type privateWorld struct {
	*wsEnv
	member, nonMember, guest, outsider servertest.Actor
	memberBot, strangerBot             persist.User
	memberBotTok, strangerBotTok       persist.BotToken
	general, private                   map[string]any
}

func newPrivateWorld(t *testing.T) *privateWorld {
	t.Helper()
	e := newWSEnv(t)
	w := &privateWorld{wsEnv: e, member: e.join(t, persist.RoleMember), nonMember: e.join(t, persist.RoleMember),
		guest: e.join(t, persist.RoleGuest), outsider: e.h.NewUser(t)}
	persisttest.Workspace(t, e.h.Store, w.outsider.User.ID)
	w.memberBot, w.memberBotTok = persisttest.Bot(t, e.h.Store, e.owner.User, e.ws.ID, nil)
	w.strangerBot, w.strangerBotTok = persisttest.Bot(t, e.h.Store, e.owner.User, e.ws.ID, nil)

	r := e.createChannel(t, e.owner.Token, map[string]any{"name": "general"})
	r.RequireStatus(t, http.StatusCreated)
	w.general = e.obj(t, r, "channel")
	require.Equal(t, "public", w.general["visibility"], "a channel is public unless created private")
	r = e.createChannel(t, w.member.Token, map[string]any{"name": "incidents", "visibility": "private"})
	r.RequireStatus(t, http.StatusCreated)
	w.private = e.obj(t, r, "channel")
	require.Equal(t, "private", w.private["visibility"])
	e.h.Post(t, w.membersPath(), w.member.Token, map[string]any{"user_id": w.memberBot.ID}).RequireStatus(t, http.StatusCreated)
	return w
}

func (w *privateWorld) membersPath() string {
	return "/api/channels/" + w.private["id"].(string) + "/members"
}

// head is the newest cursor of the workspace's log.
func (w *privateWorld) head(t *testing.T) string {
	t.Helper()
	all := w.h.Events(t, w.ws.ID)
	return persist.FormatCursor(all[len(all)-1].Cursor)
}

// TestPrivateChannelMatrix is the visibility table of issue 27: for every read path, who reads
// a private channel's message. A member (person or bot) does; the workspace's owner who is not
// in the channel, another member, a waiting-room guest, a user of another workspace and a bot
// that is not in the channel do not, and find "no such channel" (404) wherever they name it.
// Workspace-wide paths (the list, search by workspace_id, backfill, the socket) keep their answer
// for someone outside the workspace (403): it names the workspace, not the channel.
func TestPrivateChannelMatrix(t *testing.T) {
	t.Parallel()
	w := newPrivateWorld(t)
	h := w.h
	upl := upload(t, h, w.member.Token, "?workspace_id="+w.ws.ID, filePart{Name: "plan.txt", ContentType: "text/plain",
		Data: []byte("the plan")})
	upl.RequireStatus(t, http.StatusCreated)
	uploadID := w.obj(t, upl, "upload")["id"].(string)

	type reader struct {
		name, token, id string
		bot             *persist.User
		botToken        persist.BotToken
	}
	readers := []reader{
		{"member", w.member.Token, w.member.User.ID, nil, persist.BotToken{}},
		{"member bot", w.memberBotTok.Token, w.memberBot.ID, &w.memberBot, w.memberBotTok},
		{"owner not in it", w.owner.Token, w.owner.User.ID, nil, persist.BotToken{}},
		{"other member", w.nonMember.Token, w.nonMember.User.ID, nil, persist.BotToken{}},
		{"guest", w.guest.Token, w.guest.User.ID, nil, persist.BotToken{}},
		{"other workspace", w.outsider.Token, w.outsider.User.ID, nil, persist.BotToken{}},
		{"non-member bot", w.strangerBotTok.Token, w.strangerBot.ID, &w.strangerBot, w.strangerBotTok},
	}
	// The expectations, one row per reader, one column per path. "sees"/"blind" say whether the
	// private message is among what the path returns; a number is the HTTP status; "refused" a
	// socket handshake refused; "-" a path that does not apply (NATS and event subscriptions
	// are for bots).
	columns := []string{"list", "messages", "message", "thread", "pins", "route", "members", "upload", "search",
		"search_in", "backfill", "socket", "nats", "subscription", "push"}
	want := map[string][]string{
		"member":          {"sees", "200", "200", "200", "200", "200", "200", "200", "sees", "200", "sees", "sees", "-", "-", "sees"},
		"member bot":      {"sees", "200", "200", "200", "200", "200", "200", "200", "sees", "200", "sees", "sees", "sees", "sees", "-"},
		"owner not in it": {"blind", "404", "404", "404", "404", "404", "404", "404", "blind", "404", "blind", "blind", "-", "-", "blind"},
		"other member":    {"blind", "404", "404", "404", "404", "404", "404", "404", "blind", "404", "blind", "blind", "-", "-", "blind"},
		"guest":           {"blind", "404", "404", "404", "404", "404", "404", "404", "blind", "404", "blind", "blind", "-", "-", "blind"},
		"other workspace": {"403", "404", "404", "404", "404", "404", "404", "404", "403", "403", "403", "refused", "-", "-", "blind"},
		"non-member bot":  {"blind", "404", "404", "404", "404", "404", "404", "404", "blind", "404", "blind", "blind", "blind", "blind", "-"},
	}

	// Live readers first: a socket per reader, NATS and an event subscription per bot, all from
	// the head, so the next message each receives is the private one or #general's after it.
	after := w.head(t)
	sockets := map[string]*servertest.Socket{}
	for _, rd := range readers {
		s, status := h.DialSocket(t, servertest.Dial{Path: "/api/realtime/ws?workspace_id=" + w.ws.ID + "&after_cursor=" + after,
			Token: rd.token})
		if status == http.StatusSwitchingProtocols {
			sockets[rd.name] = s
		} else {
			require.Equal(t, http.StatusForbidden, status, rd.name)
		}
	}
	natsBots, hooks := map[string]*streamstest.Bot{}, map[string]*hook{}
	for i, rd := range readers {
		if rd.bot == nil {
			continue
		}
		b, err := connectBot(t, h, rd.botToken, false)
		require.NoError(t, err)
		page := b.Replay(t, map[string]any{"after_cursor": after})
		b.Subscribe(t, page.Subjects)
		natsBots[rd.name] = b
		r := h.Post(t, w.wsPath("/app-installations"), w.owner.Token, map[string]any{"app_slug": "app-" + strconv.Itoa(i),
			"bot_user_id": rd.bot.ID})
		r.RequireStatus(t, http.StatusCreated)
		inst := w.obj(t, r, "app_installation")["id"].(string)
		recv := newHook(t, nil)
		r = h.Post(t, w.wsPath("/event-subscriptions"), w.owner.Token, map[string]any{"app_installation_id": inst,
			"event_types": []string{"message.created"}, "callback_url": recv.srv.URL})
		r.RequireStatus(t, http.StatusCreated)
		recv.setSecret(w.obj(t, r, "event_subscription")["signing_secret"].(string))
		hooks[rd.name] = recv
	}
	// A bot outside the channel cannot even ask for its subject.
	stranger := natsBots["non-member bot"]
	_, err := stranger.NC.Subscribe("natter.events."+w.ws.ID+".pch."+w.private["id"].(string)+".>", func(*nats.Msg) {})
	require.NoError(t, err)
	stranger.ExpectError(t, "Permissions Violation")

	// Every person has Pushover set up and a handle the message mentions, so the push rules
	// would pick each of them but for the channel's visibility.
	body := "zebracorn outage"
	for i, rd := range readers {
		if rd.bot != nil {
			continue
		}
		handle := "reader" + strconv.Itoa(i)
		body += " @" + handle
		h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: rd.token, Body: map[string]any{
			"handle": handle, "notification_settings": map[string]any{"pushover_enabled": true,
				"pushover_user_key": "abcdefghijABCDEFGHIJ01234567" + strconv.Itoa(10+i)}}}).RequireStatus(t, http.StatusOK)
	}
	privateID := w.private["id"].(string)
	// The member bot posts, so that the member, a person, is someone push could reach.
	r := h.Post(t, "/api/channels/"+privateID+"/messages", w.memberBotTok.Token, map[string]any{"body": body,
		"upload_id": uploadID})
	r.RequireStatus(t, http.StatusCreated)
	msg := w.obj(t, r, "message")
	msgID := msg["id"].(string)
	// The next message, in the channel everyone in the workspace reads, guests included.
	var guestList struct{ Channels []struct{ ID string } }
	h.Get(t, w.wsPath("/channels"), w.guest.Token).Decode(t, &guestList)
	h.Post(t, "/api/channels/"+guestList.Channels[0].ID+"/messages", w.owner.Token, map[string]any{"body": "lunch"}).
		RequireStatus(t, http.StatusCreated)
	h.Post(t, "/api/channels/"+privateID+"/pins", w.member.Token, map[string]any{"message_id": msgID}).
		RequireStatus(t, http.StatusCreated)

	targets, err := persist.ReadV(t.Context(), h.Store, func(tx *persist.Reader) ([]persist.PushTarget, error) {
		_, targets, err := tx.PushRecipients(t.Context(), w.ws.ID, msgID, true)
		return targets, err
	})
	require.NoError(t, err)
	sees := func(ok bool) string {
		if ok {
			return "sees"
		}
		return "blind"
	}
	status := func(path, token string) string {
		return strconv.Itoa(h.Get(t, path, token).Status)
	}
	for _, rd := range readers {
		got := map[string]string{"nats": "-", "subscription": "-", "push": "-"}
		if rd.bot == nil {
			got["push"] = sees(slices.ContainsFunc(targets, func(p persist.PushTarget) bool { return p.UserID == rd.id }))
		}
		r := h.Get(t, w.wsPath("/channels"), rd.token)
		if r.Status == http.StatusOK {
			var list struct{ Channels []struct{ ID string } }
			r.Decode(t, &list)
			got["list"] = sees(slices.ContainsFunc(list.Channels, func(c struct{ ID string }) bool { return c.ID == privateID }))
		} else {
			got["list"] = strconv.Itoa(r.Status)
		}
		got["messages"] = status("/api/channels/"+privateID+"/messages", rd.token)
		got["message"] = status("/api/messages/"+msgID, rd.token)
		got["thread"] = status("/api/messages/"+msgID+"/thread", rd.token)
		got["pins"] = status("/api/channels/"+privateID+"/pins", rd.token)
		got["route"] = status("/api/routes/"+w.ws.RouteID+"/"+w.private["route_id"].(string), rd.token)
		got["members"] = status(w.membersPath(), rd.token)
		got["upload"] = status("/api/uploads/"+uploadID, rd.token)
		r = h.Get(t, "/api/search?workspace_id="+w.ws.ID+"&q=zebracorn", rd.token)
		if r.Status == http.StatusOK {
			got["search"] = sees(strings.Contains(string(r.Body), msgID))
		} else {
			got["search"] = strconv.Itoa(r.Status)
		}
		got["search_in"] = status("/api/search?workspace_id="+w.ws.ID+"&q=zebracorn&channel_id="+privateID, rd.token)
		r = h.Get(t, "/api/realtime/events?workspace_id="+w.ws.ID+"&after_cursor="+after, rd.token)
		if r.Status == http.StatusOK {
			got["backfill"] = sees(strings.Contains(string(r.Body), msgID))
		} else {
			got["backfill"] = strconv.Itoa(r.Status)
		}
		got["socket"] = "refused"
		if s := sockets[rd.name]; s != nil {
			got["socket"] = sees(nextMessage(t, func() servertest.SocketEvent { return s.Next(t) }) == msgID)
		}
		if b := natsBots[rd.name]; b != nil {
			got["nats"] = sees(nextMessage(t, func() servertest.SocketEvent { e, _ := b.Next(t); return e }) == msgID)
			call := hooks[rd.name].next(t)
			got["subscription"] = sees(strings.Contains(string(call.body), msgID))
		}
		row := make([]string, len(columns))
		for i, c := range columns {
			row[i] = got[c]
		}
		require.Equal(t, want[rd.name], row, "%s (columns %v)", rd.name, columns)
	}
}

// nextMessage reads events until the first message.created and returns its message id.
func nextMessage(t *testing.T, next func() servertest.SocketEvent) string {
	t.Helper()
	for range 100 {
		if e := next(); e.Type == "message.created" {
			var p struct {
				MessageID string `json:"message_id"`
			}
			require.NoError(t, json.Unmarshal(e.Payload, &p))
			return p.MessageID
		}
	}
	t.Fatal("no message.created in 100 events")
	return ""
}
