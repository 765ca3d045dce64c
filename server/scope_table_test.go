package server_test

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// specScopes are the concrete scopes of SPEC §Authentication "Bot scopes", written out here
// rather than read from persist, so that a scope dropped from the code is a failure.
var specScopes = []string{"workspaces:read", "channels:read", "channels:write", "messages:read", "messages:write",
	"agent_activity:write", "threads:read", "threads:write", "dms:read", "dms:write", "realtime:read",
	"uploads:write", "profile:read", "commands:write"}

// requirement is who a route admits, written by hand.
type requirement struct {
	who    string   // "public", "optional", "authenticated", "human", "member" or "bot"
	scopes []string // every scope a bot token needs, for "member" and "bot"
}

func scoped(scopes ...string) requirement { return requirement{"member", scopes} }
func botScoped(scope string) requirement  { return requirement{"bot", []string{scope}} }
func admits(who string) requirement       { return requirement{who: who} }
func (r requirement) String() string      { return fmt.Sprintf("%s%v", r.who, r.scopes) }
func (r requirement) equal(o requirement) bool {
	return r.who == o.who && slices.Equal(slices.Sorted(slices.Values(r.scopes)), slices.Sorted(slices.Values(o.scopes)))
}

// expectedAccess is every route's requirement, written by hand from SPEC §Authentication
// "Endpoint to scope mapping for bot tokens", §Endpoints (the H column and "bot token only"
// notes, "All creation and token-management routes require a human session", Integration rule 1:
// bot tokens cannot mutate installations, slash commands or subscriptions) and, for routes the
// spec does not show (CONTRACT.md), Natter's own choice, marked "spec silent". It is never
// derived from the route table: a wrong scope in server/routes.go must disagree with it.
var expectedAccess = map[string]requirement{
	"GET /healthz":          admits("public"),
	"GET /readyz":           admits("public"),
	"GET /metrics":          admits("public"),
	"GET /api/openapi.json": admits("public"), // spec silent

	"POST /api/auth/magic/request":          admits("public"),
	"POST /api/auth/magic/consume":          admits("public"),
	"GET /api/email/unsubscribe":            admits("public"), // docs/notifications.md: the token is the proof
	"POST /api/email/unsubscribe":           admits("public"),
	"POST /api/auth/logout":                 admits("optional"), // "a bot token revokes nothing"
	"POST /api/auth/password/login":         admits("public"),
	"POST /api/auth/password/change":        admits("human"), // "bot tokens rejected"
	"GET /api/auth/github/start":            admits("public"),
	"GET /api/auth/github/callback":         admits("public"),
	"GET /api/auth/github/desktop/start":    admits("public"),
	"POST /api/auth/github/desktop/consume": admits("public"),
	"GET /api/auth/oidc/start":              admits("public"),
	"GET /api/auth/oidc/callback":           admits("public"),

	"GET /api/me":   scoped("profile:read"),
	"PATCH /api/me": admits("human"),

	"GET /api/workspaces":                                               scoped("workspaces:read"),
	"POST /api/workspaces":                                              admits("human"), // spec silent: the caller becomes owner
	"GET /api/workspaces/{workspace_id}":                                scoped("workspaces:read"),
	"PATCH /api/workspaces/{workspace_id}":                              admits("human"), // spec silent: owner or moderator
	"DELETE /api/workspaces/{workspace_id}":                             admits("human"), // owner only
	"POST /api/workspaces/{workspace_id}/transfer-ownership":            admits("human"), // owner only
	"GET /api/workspaces/{workspace_id}/export":                         admits("human"), // spec silent (issue 28): owner only
	"GET /api/workspaces/{workspace_id}/members":                        scoped("workspaces:read"),
	"GET /api/workspaces/{workspace_id}/members/{user_id}":              scoped("workspaces:read"), // spec silent (issue 30): the directory's entry
	"GET /api/workspaces/{workspace_id}/presence":                       scoped("workspaces:read"), // spec silent (issue 30): as the directory
	"DELETE /api/workspaces/{workspace_id}/members/{user_id}":           admits("human"),           // spec silent: owners and moderators
	"GET /api/workspaces/{workspace_id}/moderation/members":             admits("human"),           // spec silent
	"PATCH /api/workspaces/{workspace_id}/moderation/members/{user_id}": admits("human"),           // spec silent
	"POST /api/workspaces/{workspace_id}/invites":                       admits("human"),           // spec silent
	"GET /api/workspaces/{workspace_id}/invites":                        admits("human"),           // spec silent: owners and moderators
	"DELETE /api/workspaces/{workspace_id}/invites/{invite_id}":         admits("human"),           // spec silent: owners and moderators
	"POST /api/invites/accept":                                          admits("human"),           // spec silent: a human session
	"GET /api/workspaces/{workspace_id}/membership":                     scoped("workspaces:read"), // spec silent: the caller's own standing
	"GET /api/workspaces/{workspace_id}/channels":                       scoped("channels:read"),
	"POST /api/workspaces/{workspace_id}/channels":                      scoped("channels:write"),
	"PATCH /api/channels/{channel_id}":                                  scoped("channels:write"),
	"GET /api/channels/{channel_id}/members":                            scoped("channels:read"),   // issue 27: private channels
	"POST /api/channels/{channel_id}/members":                           scoped("channels:write"),  // issue 27
	"DELETE /api/channels/{channel_id}/members/{user_id}":               scoped("channels:write"),  // issue 27
	"GET /api/workspaces/{workspace_id}/moderation/channels":            admits("human"),           // issue 27: owners and moderators
	"GET /api/workspaces/{workspace_id}/channels/browse":                scoped("channels:read"),   // issue 30: the channel browser
	"POST /api/channels/{channel_id}/join":                              admits("human"),           // issue 30: a person's own standing
	"POST /api/channels/{channel_id}/leave":                             admits("human"),           // issue 30
	"PUT /api/channels/{channel_id}/star":                               admits("human"),           // issue 30
	"DELETE /api/channels/{channel_id}/star":                            admits("human"),           // issue 30
	"GET /api/routes/{workspace_route_id}/{target_route_id}":            scoped("workspaces:read"), // spec silent

	"GET /api/channels/{channel_id}/messages":             scoped("messages:read"),
	"POST /api/channels/{channel_id}/messages":            scoped("messages:write"),
	"POST /api/channels/{channel_id}/read":                scoped("messages:read"),  // spec silent: read state is reading
	"GET /api/channels/{channel_id}/pins":                 scoped("messages:read"),  // spec silent
	"POST /api/channels/{channel_id}/pins":                scoped("messages:write"), // spec silent: pins act on messages
	"DELETE /api/channels/{channel_id}/pins/{message_id}": scoped("messages:write"), // spec silent
	"GET /api/messages/by-nonce":                          scoped("messages:read"),  // spec silent
	"GET /api/messages/{message_id}":                      scoped("messages:read"),  // spec silent
	"PATCH /api/messages/{message_id}":                    scoped("messages:write"), // spec silent
	"DELETE /api/messages/{message_id}":                   scoped("messages:write"), // spec silent
	"GET /api/messages/{message_id}/thread":               scoped("threads:read"),
	"POST /api/messages/{message_id}/thread/replies":      scoped("threads:write"),
	"POST /api/messages/{message_id}/thread/read":         scoped("threads:read"),   // spec silent: read state is reading
	"GET /api/workspaces/{workspace_id}/threads":          scoped("threads:read"),   // GET thread messages
	"GET /api/workspaces/{workspace_id}/mentions":         scoped("messages:read"),  // a listing of messages, like search
	"POST /api/messages/{message_id}/reactions":           scoped("messages:write"), // spec silent
	"DELETE /api/messages/{message_id}/reactions/{emoji}": scoped("messages:write"), // spec silent
	"GET /api/dms":                             scoped("dms:read"),
	"POST /api/dms":                            scoped("dms:write", "dms:read"), // spec silent: the answer is the conversation
	"GET /api/dms/{conversation_id}":           scoped("dms:read"),
	"DELETE /api/dms/{conversation_id}":        scoped("dms:write", "dms:read"), // spec silent: the answer is the conversation
	"POST /api/dms/{conversation_id}/open":     scoped("dms:write", "dms:read"), // spec silent
	"GET /api/dms/{conversation_id}/messages":  scoped("dms:read"),
	"POST /api/dms/{conversation_id}/messages": scoped("dms:write"),
	"POST /api/dms/{conversation_id}/read":     scoped("dms:read"),      // spec silent
	"GET /api/search":                          scoped("messages:read"), // spec silent

	"GET /api/realtime/events":     scoped("realtime:read"),
	"GET /api/realtime/ws":         scoped("realtime:read"),
	"POST /api/realtime/ephemeral": scoped("messages:write"),

	"GET /api/me/bots":                                                    admits("human"), // spec silent
	"POST /api/workspaces/{workspace_id}/bots":                            admits("human"),
	"GET /api/workspaces/{workspace_id}/bots":                             admits("human"),
	"DELETE /api/workspaces/{workspace_id}/bots/{bot_user_id}/membership": admits("human"),
	"GET /api/workspaces/{workspace_id}/bots/{bot_user_id}/tokens":        admits("human"),
	"POST /api/workspaces/{workspace_id}/bots/{bot_user_id}/tokens":       admits("human"),
	"POST /api/workspaces/{workspace_id}/bots/{bot_user_id}/setup-codes":  admits("human"),
	"POST /api/bot-setup-codes/claim":                                     admits("public"), // "unauthenticated, rate limited"
	"DELETE /api/bots/{bot_user_id}":                                      admits("human"),
	"GET /api/bots/{bot_user_id}/tokens":                                  admits("human"),
	"POST /api/bots/{bot_user_id}/tokens":                                 admits("human"),
	"POST /api/bot-tokens/{token_id}/revoke":                              admits("human"),
	"PUT /api/bots/self/commands":                                         botScoped("commands:write"),
	"GET /api/workspaces/{workspace_id}/bot-commands":                     scoped("workspaces:read"),

	"POST /api/uploads":                           scoped("uploads:write"),
	"GET /api/uploads/by-nonce":                   scoped("uploads:write"), // spec silent: the retry of an upload
	"GET /api/uploads/{upload_id}":                scoped("messages:read"), // spec silent
	"POST /api/messages/{message_id}/attachments": scoped("uploads:write", "messages:write"),

	"POST /api/workspaces/{workspace_id}/app-installations":         admits("human"),
	"GET /api/workspaces/{workspace_id}/app-installations":          admits("human"),
	"POST /api/app-installations/{installation_id}/revoke":          admits("human"),
	"POST /api/workspaces/{workspace_id}/slash-commands":            admits("human"),
	"GET /api/workspaces/{workspace_id}/slash-commands":             admits("human"),
	"POST /api/slash-commands/{command_id}/revoke":                  admits("human"),
	"POST /api/slash-commands/{command_id}/rotate-secret":           admits("human"),
	"POST /api/hooks/slash/{channel_id}":                            scoped("messages:write"), // spec silent: it posts
	"POST /api/hooks/mattermost/{channel_id}":                       scoped("messages:write"), // spec silent: it posts
	"POST /api/workspaces/{workspace_id}/event-subscriptions":       admits("human"),
	"GET /api/workspaces/{workspace_id}/event-subscriptions":        admits("human"),
	"POST /api/event-subscriptions/{subscription_id}/revoke":        admits("human"),
	"POST /api/event-subscriptions/{subscription_id}/rotate-secret": admits("human"),
	"GET /api/event-subscriptions/{subscription_id}/deliveries":     admits("human"),
	"GET /api/event-types":                                          admits("authenticated"), // "any authenticated user"
	"POST /api/workspaces/{workspace_id}/connected-accounts":        admits("human"),
	"GET /api/workspaces/{workspace_id}/connected-accounts":         admits("human"),
	"POST /api/connected-accounts/{account_id}/revoke":              admits("human"),
	"GET /api/workspaces/{workspace_id}/audit-log":                  admits("human"),

	"GET /api/me/sessions":                                   admits("human"), // spec silent: a person's own sign-ins
	"POST /api/me/sessions/revoke-others":                    admits("human"), // spec silent
	"GET /api/me/push":                                       admits("human"), // "a registration needs a session"
	"PUT /api/me/push/subscriptions":                         admits("human"),
	"DELETE /api/me/push/subscriptions":                      admits("human"),
	"GET /api/channels/{channel_id}/notification-preference": admits("human"), // spec silent
	"PUT /api/channels/{channel_id}/notification-preference": admits("human"), // spec silent
}

// TestRouteScopesMatchTheSpec checks the router against expectedAccess: the declared requirement
// of every route, then behaviour through the real router. For each route a bot may call, a token
// holding every scope but one the route needs gets 403 missing_scope, and a token holding only
// the route's scopes is let through (whatever the handler then answers, it is not a scope or
// credentials refusal). Human-only routes refuse a token holding every scope with 403
// human_only and admit a person; the bot-only route refuses a person.
func TestRouteScopesMatchTheSpec(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	owner := h.NewUser(t)
	// People are admitted or refused before the store looks at membership; an outsider shows it
	// without deleting or handing over the workspace the bot's tokens are bound to.
	outsider := h.NewUser(t)
	ws := persisttest.Workspace(t, h.Store, owner.User.ID)
	general := persisttest.Channel(t, h.Store, persist.ActorFor(owner.User), ws.ID, "general")
	bot, _ := persisttest.Bot(t, h.Store, owner.User, ws.ID, nil)
	dm := persisttest.DM(t, h.Store, ws.ID, owner.User.ID, bot.ID)
	r := h.Post(t, "/api/channels/"+general.ID+"/messages", owner.Token, map[string]any{"body": "scope check"})
	r.RequireStatus(t, http.StatusCreated)
	message := r.JSON(t)["message"].(map[string]any)["id"].(string)

	token := func(scopes ...string) string {
		return persisttest.BotToken(t, h.Store, owner.User, ws.ID, bot.ID, scopes...).Token
	}
	all := token(specScopes...)
	allBut := map[string]string{}
	only := map[string]string{} // key: the scopes joined by ","
	for _, s := range specScopes {
		allBut[s] = token(slices.DeleteFunc(slices.Clone(specScopes), func(o string) bool { return o == s })...)
	}

	// Every route is in the table, and the table names no route the router lacks.
	declared := map[string]requirement{}
	for _, rt := range h.Server.Routes() {
		declared[rt.Method+" "+rt.Pattern] = requirement{rt.Audience, rt.Scopes}
	}
	for key, want := range expectedAccess {
		got, ok := declared[key]
		require.True(t, ok, "%s: in the spec's table, missing from the router", key)
		require.True(t, want.equal(got), "%s: the router requires %s, the spec %s", key, got, want)
	}
	for key := range declared {
		_, ok := expectedAccess[key]
		require.True(t, ok, "%s: a route missing from expectedAccess; add it by hand from the spec", key)
	}

	params := map[string]string{"workspace_id": ws.ID, "workspace_route_id": ws.RouteID, "channel_id": general.ID,
		"target_route_id": general.RouteID, "conversation_id": dm, "message_id": message, "emoji": "wave",
		"bot_user_id": bot.ID, "user_id": owner.User.ID}
	paramPattern := regexp.MustCompile(`\{([a-z_]+)\}`)
	body := map[string]any{"name": "scope-check", "body": "scope check", "emoji": "wave", "display_title": "Scope check",
		"workspace_id": ws.ID, "channel_id": general.ID, "type": "typing.started", "payload": map[string]any{},
		"member_ids": []string{owner.User.ID}, "commands": []map[string]any{}, "message_id": message, "seq": 1}
	call := func(method, pattern, tok string) *servertest.Response {
		path := paramPattern.ReplaceAllStringFunc(pattern, func(m string) string {
			if v, ok := params[m[1:len(m)-1]]; ok {
				return v
			}
			return "unknown_" + m[1:len(m)-1]
		})
		req := servertest.Request{Method: method, Path: path + "?workspace_id=" + ws.ID + "&nonce=scope-check", Token: tok}
		if method != http.MethodGet {
			req.Body = body
		}
		return h.Do(t, req)
	}
	codeOf := func(r *servertest.Response) string {
		if r.Status != http.StatusForbidden && r.Status != http.StatusUnauthorized {
			return ""
		}
		code, _ := r.JSON(t)["code"].(string)
		return code
	}
	admitted := func(r *servertest.Response) bool {
		return r.Status != http.StatusUnauthorized && !slices.Contains(
			[]string{string(persist.CodeMissingScope), string(persist.CodeHumanOnly)}, codeOf(r))
	}

	for key, want := range expectedAccess {
		var method, pattern string
		_, err := fmt.Sscan(key, &method, &pattern)
		require.NoError(t, err)
		switch want.who {
		case "member", "bot":
			for _, s := range want.scopes {
				r := call(method, pattern, allBut[s])
				require.Equal(t, http.StatusForbidden, r.Status, "%s with every scope but %s: %s", key, s, r.Body)
				require.Equal(t, string(persist.CodeMissingScope), codeOf(r), "%s with every scope but %s", key, s)
			}
			set := fmt.Sprint(want.scopes)
			if only[set] == "" {
				only[set] = token(want.scopes...)
			}
			r := call(method, pattern, only[set])
			require.True(t, admitted(r), "%s with only %v: %d %s", key, want.scopes, r.Status, r.Body)
			r = call(method, pattern, outsider.Token)
			if want.who == "bot" {
				require.Equal(t, http.StatusForbidden, r.Status, "%s as a person: %s", key, r.Body)
			} else {
				require.True(t, admitted(r), "%s as a person: %d %s", key, r.Status, r.Body)
			}
		case "human":
			r := call(method, pattern, all)
			require.Equal(t, http.StatusForbidden, r.Status, "%s with a token holding every scope: %s", key, r.Body)
			require.Equal(t, string(persist.CodeHumanOnly), codeOf(r), "%s", key)
			r = call(method, pattern, outsider.Token)
			require.True(t, admitted(r), "%s as a person: %d %s", key, r.Status, r.Body)
		case "authenticated":
			r := call(method, pattern, token("profile:read"))
			require.True(t, admitted(r), "%s with one unrelated scope: %d %s", key, r.Status, r.Body)
			require.Equal(t, http.StatusUnauthorized, call(method, pattern, "").Status, "%s without credentials", key)
		}
	}
}
