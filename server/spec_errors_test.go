package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestSpecErrors walks SPEC §Errors: each subtest is a condition of the table, named after its
// status, and checks that status written as the number the spec gives. One harness runs with the
// defaults (no push key, no metrics, no passwords, no OAuth credentials), which several rows
// need; conditions that need another set-up skip and name the test that checks them.
func TestSpecErrors(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	elsewhere := func(where string) func(t *testing.T) {
		return func(t *testing.T) { t.Skip(where) }
	}
	status := func(t *testing.T, want int, r *servertest.Response) {
		t.Helper()
		require.Equal(t, want, r.Status, "%s", r.Body)
	}
	integrations := func(t *testing.T) *intEnv {
		owner := h.NewUser(t)
		e := &wsEnv{h: h, owner: owner, ws: persisttest.Workspace(t, h.Store, owner.User.ID)}
		bot, _ := persisttest.Bot(t, h.Store, owner.User, e.ws.ID, nil)
		return &intEnv{wsEnv: e, bot: bot}
	}
	rows := []struct {
		row   string
		check func(t *testing.T)
	}{
		{"200DuplicateReactionAdd", func(t *testing.T) {
			c := newChat(t, h)
			m := c.say(t, c.alice, channelMessages(c.general.ID), "react")
			status(t, 201, h.Post(t, "/api/messages/"+m.ID+"/reactions", c.alice.Token, map[string]any{"emoji": "👍"}))
			status(t, 200, h.Post(t, "/api/messages/"+m.ID+"/reactions", c.alice.Token, map[string]any{"emoji": "👍"}))
		}},
		{"200ThreadReplyNonceReplay", func(t *testing.T) {
			c := newChat(t, h)
			root := c.say(t, c.alice, channelMessages(c.general.ID), "root")
			body := map[string]any{"body": "once", "nonce": "reply-1"}
			status(t, 201, h.Post(t, "/api/messages/"+root.ID+"/thread/replies", c.alice.Token, body))
			status(t, 200, h.Post(t, "/api/messages/"+root.ID+"/thread/replies", c.alice.Token, body))
		}},
		{"201And200UploadNonce", func(t *testing.T) {
			c := newChat(t, h)
			f := filePart{Name: "a.txt", ContentType: "text/plain", Data: []byte("a")}
			status(t, 201, upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID+"&nonce=up-1", f))
			status(t, 200, upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID+"&nonce=up-1", f))
		}},
		{"400ThreadQuery", func(t *testing.T) {
			c := newChat(t, h)
			root := c.say(t, c.alice, channelMessages(c.general.ID), "root")
			for _, q := range []string{"before_seq=2&after_seq=1", "latest=true&before_seq=2", "around_seq=1&after_seq=1",
				"before_seq=-1", "after_seq=1.5"} {
				status(t, 400, h.Get(t, "/api/messages/"+root.ID+"/thread?"+q, c.alice.Token))
			}
		}},
		{"400EmptyReplyAndReplyToAReply", func(t *testing.T) {
			c := newChat(t, h)
			root := c.say(t, c.alice, channelMessages(c.general.ID), "root")
			status(t, 400, h.Post(t, "/api/messages/"+root.ID+"/thread/replies", c.alice.Token, map[string]any{"body": ""}))
			reply := c.reply(t, c.alice, root.ID, "reply")
			status(t, 400, h.Post(t, "/api/messages/"+reply.ID+"/thread/replies", c.alice.Token, map[string]any{"body": "nested"}))
		}},
		{"400UnknownEventTypeAndRotateRevoked", func(t *testing.T) {
			e := integrations(t)
			inst, _ := e.install(t, nil)
			status(t, 400, h.Post(t, e.wsPath("/event-subscriptions"), e.owner.Token, map[string]any{"app_installation_id": inst,
				"event_types": []string{"message.exploded"}, "callback_url": "https://hooks.example.com/e"}))
			id, _ := e.register(t, inst, "/deploy", "https://hooks.example.com/s")
			status(t, 200, h.Post(t, "/api/slash-commands/"+id+"/revoke", e.owner.Token, nil))
			status(t, 400, h.Post(t, "/api/slash-commands/"+id+"/rotate-secret", e.owner.Token, nil))
			sub, _ := e.subscribe(t, inst, "https://hooks.example.com/e", "message.created")
			status(t, 200, h.Post(t, "/api/event-subscriptions/"+sub+"/revoke", e.owner.Token, nil))
			status(t, 400, h.Post(t, "/api/event-subscriptions/"+sub+"/rotate-secret", e.owner.Token, nil))
		}},
		{"400DeliveryListingBeforeRemovedByRetention", elsewhere("TestEventSubscriptionDelivery prunes and lists before the removed attempt")},
		{"400ReservedSlug", func(t *testing.T) {
			me := h.NewUser(t)
			for _, slug := range []string{"clickclack", "guests"} {
				status(t, 400, h.Post(t, "/api/workspaces", me.Token, map[string]any{"name": "Reserved", "slug": slug}))
			}
			r := h.Post(t, "/api/workspaces", me.Token, map[string]any{"name": "Mine"})
			status(t, 201, r)
			id := r.JSON(t)["workspace"].(map[string]any)["id"].(string)
			status(t, 400, h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/workspaces/" + id, Token: me.Token,
				Body: map[string]any{"slug": "guests"}}))
		}},
		{"401RevokedOrUnknownToken", func(t *testing.T) {
			owner := h.NewUser(t)
			ws := persisttest.Workspace(t, h.Store, owner.User.ID)
			_, token := persisttest.Bot(t, h.Store, owner.User, ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
			status(t, 200, h.Get(t, "/api/workspaces", token.Token))
			status(t, 200, h.Post(t, "/api/bot-tokens/"+token.ID+"/revoke", owner.Token, nil))
			status(t, 401, h.Get(t, "/api/workspaces", token.Token))
			status(t, 401, h.Get(t, "/api/workspaces", "ccb_unknown"))
		}},
		{"401WrongPasswordUnknownIdentifierNoPassword", elsewhere("TestPasswordLogin (password sign-in on)")},
		{"403ChannelUpdateByANonOwner", func(t *testing.T) {
			c := newChat(t, h)
			for _, who := range []servertest.Actor{c.mod, c.alice} {
				r := h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/channels/" + c.general.ID, Token: who.Token,
					Body: map[string]any{"display_title": "mine"}})
				status(t, 403, r)
				require.Equal(t, "workspace owner permission required", r.JSON(t)["error"], "the spec's message")
			}
		}},
		{"403ScopeMembershipWorkspaceToken", elsewhere("TestRouteScopesMatchTheSpec and TestAuthorizationMatrix")},
		{"404SetupCodeUnknown", func(t *testing.T) {
			status(t, 404, claim(t, h, "AAAA-BBBB-CCCC"))
		}},
		{"404RepeatedBotDeletion", func(t *testing.T) {
			owner := h.NewUser(t)
			ws := persisttest.Workspace(t, h.Store, owner.User.ID)
			bot, _ := persisttest.Bot(t, h.Store, owner.User, ws.ID, nil)
			del := servertest.Request{Method: http.MethodDelete, Path: "/api/bots/" + bot.ID, Token: owner.Token}
			status(t, 200, h.Do(t, del))
			status(t, 404, h.Do(t, del))
		}},
		{"404PushWritesWhenDisabled", func(t *testing.T) {
			me := h.NewUser(t)
			body := map[string]any{"endpoint": "https://push.example.com/x", "user_id": me.User.ID}
			status(t, 404, h.Do(t, servertest.Request{Method: http.MethodPut, Path: "/api/me/push/subscriptions", Token: me.Token, Body: body}))
			status(t, 404, h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/me/push/subscriptions", Token: me.Token, Body: body}))
		}},
		{"404MetricsWhenDisabled", func(t *testing.T) {
			status(t, 404, h.Get(t, "/metrics", ""))
		}},
		{"404UploadNonceLookupMiss", func(t *testing.T) {
			c := newChat(t, h)
			r := h.Get(t, "/api/uploads/by-nonce?workspace_id="+c.ws.ID+"&nonce=never", c.alice.Token)
			status(t, 404, r)
			require.Equal(t, "supported", r.Header.Get("X-Natter-Upload-Nonce"))
		}},
		{"409DuplicatePin", func(t *testing.T) {
			c := newChat(t, h)
			m := c.say(t, c.alice, channelMessages(c.general.ID), "pin me")
			status(t, 201, h.Post(t, pins(c.general.ID), c.alice.Token, map[string]any{"message_id": m.ID}))
			status(t, 409, h.Post(t, pins(c.general.ID), c.alice.Token, map[string]any{"message_id": m.ID}))
		}},
		{"409At100Pins", elsewhere("TestSpecLimits/PinsPerChannel100")},
		{"409UploadNonceReusedForAnotherWorkspace", func(t *testing.T) {
			c := newChat(t, h)
			other := persisttest.Workspace(t, h.Store, c.alice.User.ID)
			f := filePart{Name: "a.txt", ContentType: "text/plain", Data: []byte("a")}
			status(t, 201, upload(t, h, c.alice.Token, "?workspace_id="+c.ws.ID+"&nonce=shared", f))
			status(t, 409, upload(t, h, c.alice.Token, "?workspace_id="+other.ID+"&nonce=shared", f))
		}},
		{"409PasswordChange", elsewhere("TestPasswordChange/NoPasswordIs409AndStaysUnenrolled and TestPasswordChangeRaces")},
		{"409PushUserIDDiffers", elsewhere("TestPushRegister (a push key on)")},
		{"426Protocol1OnNamespacedCookies", elsewhere("TestGitHubDesktop (a namespaced-cookie deployment)")},
		{"501SignInWithoutCredentialsOrPasswords", func(t *testing.T) {
			status(t, 501, h.Get(t, "/api/auth/github/start", ""))
			status(t, 501, h.Get(t, "/api/auth/oidc/start", ""))
			status(t, 501, h.Post(t, "/api/auth/password/login", "", map[string]any{"identifier": "a@example.com", "password": "password"}))
			me := h.NewUser(t)
			status(t, 501, h.Post(t, "/api/auth/password/change", me.Token, map[string]any{"current_password": "a", "new_password": "password"}))
		}},
		{"503ReadyzWithoutTheDatabase", elsewhere("TestHealth (the database closed)")},
		{"Close1008SessionRevoked", elsewhere("TestSocketRevocation and TestBotRealtime compare with 1008")},
	}
	for _, row := range rows {
		t.Run(row.row, func(t *testing.T) {
			t.Parallel()
			row.check(t)
		})
	}
}
