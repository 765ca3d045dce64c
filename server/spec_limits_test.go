package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/push"
	"github.com/natterchat/natter/realtime/push/pushtest"
	"github.com/natterchat/natter/server/passwordhash"
	"github.com/natterchat/natter/server/signin"
)

// TestSpecLimits walks SPEC §Limits row by row, each subtest named after its row. Every number
// is written here as the spec states it, never read from the code. Where the rule can be seen
// through the router it is checked there, one past the limit and at it; a few rows are a
// component's default with no answer to observe in a test's time, and those compare the
// exported default with the spec's number. Rows about the web client, or already checked by a
// test too costly to repeat, skip and say where they are checked.
func TestSpecLimits(t *testing.T) {
	t.Parallel()
	h := servertest.New(t, servertest.WithWebPush(nil))
	elsewhere := func(where string) func(t *testing.T) {
		return func(t *testing.T) { t.Skip(where) }
	}
	rows := []struct {
		row   string
		check func(t *testing.T)
	}{
		{"PinsPerChannel100", func(t *testing.T) {
			c := newChat(t, h)
			ids := seedMessages(t, c, 101)
			for _, id := range ids[:100] {
				h.Post(t, pins(c.general.ID), c.alice.Token, map[string]any{"message_id": id}).RequireStatus(t, http.StatusCreated)
			}
			h.Post(t, pins(c.general.ID), c.alice.Token, map[string]any{"message_id": ids[100]}).
				RequireError(t, http.StatusConflict, persist.CodeConflict)
			c.del(t, c.alice, pins(c.general.ID)+"/"+ids[0]).RequireStatus(t, http.StatusOK)
			h.Post(t, pins(c.general.ID), c.alice.Token, map[string]any{"message_id": ids[100]}).RequireStatus(t, http.StatusCreated)
		}},
		{"HandleLength2To32", func(t *testing.T) {
			me := h.NewUser(t)
			for handle, status := range map[string]int{"a": 400, "ab": 200, strings.Repeat("b", 32): 200, strings.Repeat("c", 33): 400} {
				r := h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: me.Token,
					Body: map[string]any{"handle": handle}})
				require.Equal(t, status, r.Status, "handle of %d characters: %s", len(handle), r.Body)
			}
		}},
		{"ChannelDisplayTitleAtMost200", func(t *testing.T) {
			c := newChat(t, h)
			create := "/api/workspaces/" + c.ws.ID + "/channels"
			h.Post(t, create, c.owner.Token, map[string]any{"name": "long", "display_title": strings.Repeat("é", 200)}).
				RequireStatus(t, http.StatusCreated)
			h.Post(t, create, c.owner.Token, map[string]any{"name": "longer", "display_title": strings.Repeat("é", 201)}).
				RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}},
		{"ThreadRepliesPage1To200Default100", func(t *testing.T) {
			c := newChat(t, h)
			root := c.say(t, c.alice, channelMessages(c.general.ID), "root")
			for i := range 201 {
				c.reply(t, c.alice, root.ID, fmt.Sprint("reply ", i))
			}
			count := func(query string) int {
				var page struct {
					Replies []json.RawMessage `json:"replies"`
				}
				r := h.Get(t, "/api/messages/"+root.ID+"/thread"+query, c.alice.Token)
				r.RequireStatus(t, http.StatusOK)
				r.Decode(t, &page)
				return len(page.Replies)
			}
			require.Equal(t, 100, count(""))
			require.Equal(t, 1, count("?limit=1"))
			require.Equal(t, 200, count("?limit=200"))
			require.Equal(t, 100, count("?limit=201"), "out of range falls back to 100")
			require.Equal(t, 100, count("?limit=0"), "out of range falls back to 100")
		}},
		{"ThreadRepliesWebPanel", elsewhere("web client (load-more 50, 300 rows trimmed toward 200): server/web, not the API")},
		{"MemberDirectoryPageDefault100Max200", func(t *testing.T) {
			c := newChat(t, h) // owner, moderator and alice
			for range 198 {
				persisttest.Member(t, h.Store, c.ws.ID, persisttest.User(t, h.Store, nil).ID, persist.RoleMember)
			}
			count := func(query url.Values) int {
				var page memberPage
				r := h.Get(t, "/api/workspaces/"+c.ws.ID+"/members?"+query.Encode(), c.alice.Token)
				r.RequireStatus(t, http.StatusOK)
				r.Decode(t, &page)
				return len(page.Members)
			}
			require.Equal(t, 100, count(nil))
			require.Equal(t, 200, count(url.Values{"limit": {"200"}}))
			require.Equal(t, 200, count(url.Values{"limit": {"201"}}), "at most 200, with 201 members")
		}},
		{"DeliveryAttemptsPageDefault50Max200", func(t *testing.T) {
			e := newIntEnv(t)
			general := persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")
			inst, _ := e.install(t, nil)
			recv := newHook(t, nil)
			id, _ := e.subscribe(t, inst, recv.srv.URL, "message.created")
			for i := range 51 {
				e.post(t, "/api/channels/"+general.ID+"/messages", e.owner.Token, fmt.Sprint("message ", i))
			}
			for range 51 {
				e.attempt(t, id)
			}
			path := "/api/event-subscriptions/" + id + "/deliveries"
			var page struct {
				Deliveries []json.RawMessage `json:"deliveries"`
				NextCursor *string           `json:"next_cursor"`
			}
			e.h.Get(t, path, e.owner.Token).Decode(t, &page)
			require.Len(t, page.Deliveries, 50)
			require.NotNil(t, page.NextCursor)
			r := e.h.Get(t, path+"?limit=200", e.owner.Token)
			r.RequireStatus(t, http.StatusOK)
			r.Decode(t, &page)
			require.Len(t, page.Deliveries, 51)
			// Past the maximum: refused, or served at the maximum (51 here).
			if r := e.h.Get(t, path+"?limit=201", e.owner.Token); r.Status != http.StatusBadRequest {
				r.RequireStatus(t, http.StatusOK)
				r.Decode(t, &page)
				require.Len(t, page.Deliveries, 51)
			}
		}},
		{"UploadSize64MiB", elsewhere("TestUploadCreate/TooLargeIs413AndStoresNothing sends 64 MiB + 1 byte and 64 MiB; not repeated")},
		{"UploadNonceAtMost128", func(t *testing.T) {
			c := newChat(t, h)
			f := filePart{Name: "a.txt", ContentType: "text/plain", Data: []byte("hi")}
			upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID+"&nonce="+strings.Repeat("n", 128), f).RequireStatus(t, http.StatusCreated)
			upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID+"&nonce="+strings.Repeat("n", 129), f).
				RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}},
		{"SetupCodeFormatTenMinutesSingleUse", func(t *testing.T) {
			clock := persisttest.NewClock()
			w := newBotWorld(t, servertest.WithClock(clock))
			bot, _ := w.serviceBot(t, "bot:write")
			r := w.h.Post(t, w.botsPath()+"/"+bot.ID+"/setup-codes", w.owner.Token, map[string]any{"name": "first"})
			r.RequireStatus(t, http.StatusCreated)
			var minted struct {
				SetupCode struct {
					Code      string    `json:"code"`
					ExpiresAt time.Time `json:"expires_at"`
				} `json:"setup_code"`
			}
			r.Decode(t, &minted)
			require.Regexp(t, `^[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$`, minted.SetupCode.Code)
			require.Equal(t, 10*time.Minute, minted.SetupCode.ExpiresAt.Sub(clock.Now()))
			clock.Advance(10 * time.Minute)
			claim(t, w.h, minted.SetupCode.Code).RequireError(t, http.StatusNotFound, persist.CodeNotFound)

			code := mintSetupCode(t, w, w.owner, bot.ID, map[string]any{"name": "second"})
			clock.Advance(10*time.Minute - time.Second)
			claim(t, w.h, code).RequireStatus(t, http.StatusOK)
			claim(t, w.h, code).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		}},
		{"BotCommandMenu100Commands100Characters", func(t *testing.T) {
			w := newBotWorld(t)
			_, token := w.serviceBot(t, "bot:write")
			menu := make([]map[string]any, 101)
			for i := range menu {
				menu[i] = map[string]any{"command": fmt.Sprint("c", i), "description": "d"}
			}
			putMenu(t, w.h, token, menu).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
			require.Len(t, menuOf(t, putMenu(t, w.h, token, menu[:100])), 100)
			for _, field := range []string{"description", "args_hint"} {
				entry := map[string]any{"command": "long", "description": "d", field: strings.Repeat("é", 100)}
				menuOf(t, putMenu(t, w.h, token, []map[string]any{entry}))
				entry[field] = strings.Repeat("é", 101)
				putMenu(t, w.h, token, []map[string]any{entry}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
			}
		}},
		{"PasswordLength8To256CodePoints", func(t *testing.T) {
			b := setupPasswords(t)
			me := b.enrolled(t, "old password")
			for _, next := range []string{strings.Repeat("é", 7), strings.Repeat("密", 257)} {
				b.change(t, me.Token, "old password", next).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
			}
			b.change(t, me.Token, "old password", strings.Repeat("é", 8)).RequireStatus(t, http.StatusOK)
			b.change(t, me.Token, strings.Repeat("é", 8), strings.Repeat("密", 256)).RequireStatus(t, http.StatusOK)
		}},
		{"WrongCurrentPassword5In15Minutes", func(t *testing.T) {
			b := setupPasswords(t)
			me := b.enrolled(t, "old password")
			for range 5 {
				b.change(t, me.Token, "wrong guess", "new password").RequireError(t, http.StatusUnauthorized, persist.CodeInvalidCredentials)
			}
			b.change(t, me.Token, "old password", "new password").RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
			b.clock.Advance(15*time.Minute - time.Second)
			b.change(t, me.Token, "old password", "new password").RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
			b.clock.Advance(time.Second)
			b.change(t, me.Token, "old password", "new password").RequireStatus(t, http.StatusOK)
		}},
		{"PasswordHashingConcurrency2", func(t *testing.T) {
			require.Equal(t, 2, passwordhash.DefaultConcurrency, "the default bound on concurrent derivations")
		}},
		{"GuestPosting3PerDay", func(t *testing.T) {
			c := newChat(t, h)
			guest := c.join(t, persist.RoleGuest)
			for i := range 3 {
				c.say(t, guest, channelMessages(c.guestRoom.ID), fmt.Sprint("post ", i))
			}
			c.post(t, guest, channelMessages(c.guestRoom.ID), map[string]any{"body": "a fourth"}).
				RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
		}},
		{"ExtpushUserKey30Characters", func(t *testing.T) {
			me := h.NewUser(t)
			for key, status := range map[string]int{strings.Repeat("k", 29): 400, strings.Repeat("k", 30): 200, strings.Repeat("k", 31): 400} {
				r := h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: me.Token,
					Body: map[string]any{"notification_settings": map[string]any{"pushover_enabled": true, "pushover_user_key": key}}})
				require.Equal(t, status, r.Status, "a key of %d characters: %s", len(key), r.Body)
			}
		}},
		{"PushDevices10TheEleventhDropsTheOldest", func(t *testing.T) {
			svc, me := pushtest.New(t), h.NewUser(t)
			var devices []*pushtest.Device
			for i := range 11 {
				d := svc.NewDevice(t)
				devices = append(devices, d)
				pushSubscribe(t, h, me, d, fmt.Sprint("device ", i)).RequireStatus(t, http.StatusOK)
			}
			st := getPushStatus(t, h, me.Token, devices[0].Digest)
			require.Len(t, st.Devices, 10)
			require.False(t, st.ThisDevice, "the oldest was dropped")
		}},
		{"PushPayloadUnder3KBBody240Characters", func(t *testing.T) {
			raw, err := push.Payload{UserID: "usr_x", Title: strings.Repeat("T", 500), Body: strings.Repeat("密", 1000),
				Tag: "msg_x", URL: "/T/C"}.Encode()
			require.NoError(t, err)
			require.Less(t, len(raw), 3*1024)
			var p push.Payload
			require.NoError(t, json.Unmarshal(raw, &p))
			require.Equal(t, 240, utf8.RuneCountInString(p.Body))
		}},
		{"PushQueue1024", elsewhere("a deliverer default (server/webpush); overflow is not observable through the API")},
		{"PushBackoffSchedule", func(t *testing.T) {
			for failure, want := range map[int]time.Duration{1: time.Minute, 2: 5 * time.Minute, 3: 30 * time.Minute,
				4: 2 * time.Hour, 5: 6 * time.Hour, 6: 24 * time.Hour, 20: 24 * time.Hour} {
				require.Equal(t, want, persist.PushBackoff(failure, 0), "failure %d", failure)
			}
			require.Equal(t, 3*time.Hour, persist.PushBackoff(1, 3*time.Hour), "a longer Retry-After is honoured")
			require.Equal(t, 24*time.Hour, persist.PushBackoff(1, 72*time.Hour), "up to 1 day")
		}},
		{"PushPreviewCheck", elsewhere("the service worker's 5-second timeout: server/web, not the API")},
		{"DeadDeviceRules", elsewhere("persist TestPushSweep pins 7 days, 2 refusals, 1 day and 30 days with the clock")},
		{"OAuthTransaction10MinutesDesktopGrant5", func(t *testing.T) {
			require.Equal(t, 10*time.Minute, persist.OAuthTransactionLifetime)
			require.Equal(t, 5*time.Minute, persist.DesktopGrantLifetime)
		}},
		{"OAuthPendingCapacity", func(t *testing.T) {
			require.Equal(t, persist.OAuthLimits{Transactions: 8192, PerBinding: 8, PerAddress: 64, DesktopGrants: 4096}, persist.DefaultOAuthLimits)
		}},
		{"OIDCDiscovery30Seconds64KiB", func(t *testing.T) {
			require.Equal(t, 30*time.Second, signin.DefaultTimeout)
			require.Equal(t, 64<<10, signin.MaxDiscoveryDocument)
		}},
		{"ProxyKeySetRefresh", elsewhere("an accessproxy default, checked by the accessproxy package's tests")},
		{"GracefulShutdown", elsewhere("a server default applied in server.New; a drain is not observable in a test's time")},
		{"UploadStoreResponseTiming", elsewhere("an S3 store default (server/blob)")},
		{"ArtifactPreview", elsewhere("web client: server/web, not the API")},
		{"WorkspaceDeletionOwnerOnly", func(t *testing.T) {
			c := newChat(t, h)
			path := "/api/workspaces/" + c.ws.ID
			for _, who := range []servertest.Actor{c.mod, c.alice} {
				h.Do(t, servertest.Request{Method: http.MethodDelete, Path: path, Token: who.Token}).RequireStatus(t, http.StatusForbidden)
			}
			r := h.Do(t, servertest.Request{Method: http.MethodDelete, Path: path, Token: c.owner.Token})
			require.Less(t, r.Status, 300, "%s", r.Body)
		}},
		{"EventRetention", elsewhere("no number in the spec; streams TestRelayAppliesPrunes and the admin prune tests")},
	}
	for _, row := range rows {
		t.Run(row.row, func(t *testing.T) {
			t.Parallel()
			row.check(t)
		})
	}
}
