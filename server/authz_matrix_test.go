package server_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/server/passwordhash"
)

// TestAuthorizationMatrix walks every route of the route table (so routes added later are
// covered without touching this test) with six hostile callers and checks that none of them
// learns or changes anything of the victim workspace:
//
//   - no credentials, a revoked bot token: 401 on every route that needs a caller;
//   - a bot token of the workspace lacking the route's scope (every other scope held): 403;
//   - a member of another workspace, a bot token bound to another workspace (its bot is a member
//     of the victim workspace too), a waiting-room guest of the victim workspace: any answer
//     but a 500, as long as it holds none of the workspace's secrets.
//
// Path parameters point at the victim's resources. Afterwards a fingerprint of every row of
// the victim workspace (and of its members' user rows) must be unchanged.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Password sign-in on (cheap parameters), so its routes meet the attackers too.
	hasher, err := passwordhash.New(passwordhash.Config{Params: passwordhash.Params{Time: 1, MemoryKiB: 64, Threads: 1}})
	require.NoError(t, err)
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.PasswordAuth, c.Passwords = true, hasher }))
	store := h.Store

	// The victim workspace and what it holds.
	owner, member, guest := h.NewUser(t), h.NewUser(t), h.NewUser(t)
	ws := persisttest.Workspace(t, store, owner.User.ID)
	persisttest.Member(t, store, ws.ID, member.User.ID, persist.RoleMember)
	persisttest.Member(t, store, ws.ID, guest.User.ID, persist.RoleGuest)
	ownerActor := persist.ActorFor(owner.User)
	persisttest.Channel(t, store, ownerActor, ws.ID, persist.GuestChannel)
	secret := persisttest.Channel(t, store, ownerActor, ws.ID, "secret-plans")
	dm := persisttest.DM(t, store, ws.ID, owner.User.ID, member.User.ID)
	victimBot, victimToken := persisttest.Bot(t, store, owner.User, ws.ID, &persisttest.BotOpts{
		Handle: persisttest.Ptr("victim"), Scopes: []string{"bot:admin", persist.ScopeAgentActivityWrite}})
	putMenu(t, h, victimToken.Token, []map[string]any{{"command": "launch", "description": "Launch"}}).RequireStatus(t, http.StatusOK)
	ownerHash, err := hasher.Hash(ctx, "owner password")
	require.NoError(t, err)
	_, err = persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) { return tx.PasswordSet(ctx, owner.User.Email, ownerHash) })
	require.NoError(t, err)
	code, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.SetupCode, error) {
		return tx.BotSetupCodeCreate(ctx, ownerActor, ws.ID, victimBot.ID, persist.SetupCodeParams{Name: "pending"})
	})
	require.NoError(t, err)
	dmRoute := persist.RouteID("D", dm)
	post := func(path, body string) string {
		r := h.Post(t, path, owner.Token, map[string]any{"body": body})
		r.RequireStatus(t, http.StatusCreated)
		return r.JSON(t)["message"].(map[string]any)["id"].(string)
	}
	secretMessage := post("/api/channels/"+secret.ID+"/messages", "the launch code is hunter2")
	dmMessage := post("/api/dms/"+dm+"/messages", "just between us: swordfish")
	h.Post(t, "/api/messages/"+secretMessage+"/thread/replies", owner.Token, map[string]any{"body": "reply: hunter3"}).
		RequireStatus(t, http.StatusCreated)
	plans := uploadOf(t, upload(t, h, owner.Token, "?workspace_id="+ws.ID+"&nonce=matrix",
		filePart{Name: "plans-hunter4.txt", ContentType: "text/plain", Data: []byte("blueprints: hunter5")}))
	attach(t, h, owner, secretMessage, plans.ID).RequireStatus(t, http.StatusOK)

	// The attackers' own places.
	outsider := h.NewUser(t)
	elsewhere := persisttest.Workspace(t, store, outsider.User.ID)
	strayBot, strayToken := persisttest.Bot(t, store, outsider.User, elsewhere.ID, &persisttest.BotOpts{
		Scopes: []string{"bot:admin", persist.ScopeAgentActivityWrite}})
	persisttest.Member(t, store, ws.ID, strayBot.ID, persist.RoleBot)
	insider, _ := persisttest.Bot(t, store, owner.User, ws.ID, nil)
	revoked := persisttest.BotToken(t, store, owner.User, ws.ID, insider.ID, "bot:admin", persist.ScopeAgentActivityWrite)
	_, err = persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.BotToken, error) {
		return tx.BotTokenRevoke(ctx, ownerActor, revoked.ID)
	})
	require.NoError(t, err)
	routes := h.Server.Routes()
	require.NotEmpty(t, routes)
	lacking := map[string]string{} // scope → a token of insider holding every scope but that one
	for _, rt := range routes {
		for _, scope := range append([]string{rt.Scope}, rt.Scopes...) {
			if _, ok := lacking[scope]; !ok {
				others := slices.DeleteFunc(slices.Clone(persist.AllScopes), func(s string) bool { return s == scope })
				lacking[scope] = persisttest.BotToken(t, store, owner.User, ws.ID, insider.ID, others...).Token
			}
		}
	}

	integ := integrationFixtures(t, h, owner.Token, ws.ID, victimBot.ID, member.User.ID)
	secrets := []string{victimToken.Token, victimToken.ID, code.Code, owner.Token, member.Token, owner.User.Email,
		secret.ID, secret.RouteID, dm, dmRoute, secretMessage, dmMessage, "hunter2", "hunter3", "swordfish",
		plans.ID, "hunter4", "hunter5",
		integ.installationToken, integ.commandSecret, integ.subscriptionSecret, "https://hooks.example.com/victim"}
	params := map[string]string{
		"workspace_id": ws.ID, "workspace_route_id": ws.RouteID, "channel_id": secret.ID, "target_route_id": secret.RouteID,
		"conversation_id": dm, "bot_user_id": victimBot.ID, "token_id": victimToken.ID, "user_id": member.User.ID,
		"emoji": "thumbsup", "message_id": secretMessage,
		"upload_id":       plans.ID,
		"installation_id": integ.installationID, "command_id": integ.commandID,
		"subscription_id": integ.subscriptionID, "account_id": integ.accountID,
	}
	query := "?workspace_id=" + ws.ID + "&channel_id=" + secret.ID + "&direct_conversation_id=" + dm +
		"&q=secret&after_cursor=&nonce=matrix&include_tail=true"
	body := map[string]any{
		"name": "matrix", "display_name": "Matrix", "slug": "matrix-" + ws.ID[len(ws.ID)-6:], "body": "matrix",
		"text": "matrix", "emoji": "thumbsup", "archived": true, "role": "moderator", "blocked": true,
		"timeout_minutes": 60, "user_id": member.User.ID, "member_ids": []string{owner.User.ID, member.User.ID},
		"workspace_id": ws.ID, "channel_id": secret.ID, "direct_conversation_id": dm, "message_id": params["message_id"],
		"upload_id": params["upload_id"], "quoted_message_id": secretMessage, "bot_user_id": victimBot.ID, "owner_user_id": member.User.ID,
		"scopes": []string{"bot:admin"}, "commands": []map[string]any{{"command": "pwn", "description": "pwn"}},
		"code": "AAAA-BBBB-CCCC", "token": "mgt_matrix", "seq": 1, "type": "typing.started", "payload": map[string]any{},
		"kind": "message", "icon_url": "", "handle": "matrix",
		"identifier": owner.User.Email, "password": "guess", "current_password": "owner password", "new_password": "taken over",
	}
	humanToken := func(u persist.User) func() string {
		// A fresh session per request: logging out must not blind the rest of the walk.
		return func() string { return persisttest.Session(t, store, u.ID) }
	}
	type attacker struct {
		name  string
		token func(scope string) string
		want  func(audience string) int // the exact status required, or 0 for "any but 500"
		// perScope runs the attacker once for each scope of a route that needs several.
		perScope bool
	}
	needsCaller := func(status int) func(string) int {
		return func(audience string) int {
			if audience == "public" || audience == "optional" {
				return 0
			}
			return status
		}
	}
	attackers := []attacker{
		{"NoCredentials", func(string) string { return "" }, needsCaller(http.StatusUnauthorized), false},
		{"RevokedToken", func(string) string { return revoked.Token }, needsCaller(http.StatusUnauthorized), false},
		{"TokenWithoutTheScope", func(scope string) string { return lacking[scope] }, func(audience string) int {
			if audience == "authenticated" {
				return 0 // no scope to lack
			}
			return needsCaller(http.StatusForbidden)(audience)
		}, true},
		{"MemberOfAnotherWorkspace", func(string) string { return humanToken(outsider.User)() }, func(string) int { return 0 }, false},
		{"TokenBoundToAnotherWorkspace", func(string) string { return strayToken.Token }, func(string) int { return 0 }, false},
		{"Guest", func(string) string { return humanToken(guest.User)() }, func(string) int { return 0 }, false},
	}

	victims := []string{owner.User.ID, member.User.ID, victimBot.ID, insider.ID, strayBot.ID}
	fingerprint := func() map[string]string {
		fp := persisttest.Fingerprint(t, store, ws.ID, victims)
		// The relay records its position asynchronously as it catches up with the setup's
		// events; a hostile write would show in events and event_heads anyway.
		delete(fp, "relay_positions")
		return fp
	}
	before := fingerprint()
	require.Contains(t, before, "bot_tokens")

	// Each route once with the parameters above; routes on a message also once more on the
	// direct message.
	paramPattern := regexp.MustCompile(`\{([a-z_]+)\}`)
	type target struct {
		route server.RouteInfo
		path  string
	}
	var targets []target
	for _, rt := range routes {
		fill := func(overrides map[string]string) string {
			return paramPattern.ReplaceAllStringFunc(rt.Pattern, func(m string) string {
				name := m[1 : len(m)-1]
				if v, ok := overrides[name]; ok {
					return v
				}
				if v, ok := params[name]; ok {
					return v
				}
				t.Logf("%s %s: no fixture for {%s}; using a placeholder", rt.Method, rt.Pattern, name)
				return "unknown_" + name
			})
		}
		targets = append(targets, target{rt, fill(nil)})
		if strings.Contains(rt.Pattern, "{message_id}") {
			targets = append(targets, target{rt, fill(map[string]string{"message_id": dmMessage})})
		}
	}
	var violations []string
	for _, tg := range targets {
		rt := tg.route
		for _, a := range attackers {
			scopes := []string{rt.Scope}
			if a.perScope && len(rt.Scopes) > 1 {
				scopes = rt.Scopes
			}
			for _, scope := range scopes {
				req := servertest.Request{Method: rt.Method, Path: tg.path + query}
				if rt.Method != http.MethodGet && rt.Method != http.MethodHead {
					req.Body = body
				}
				req.Token = a.token(scope)
				r := h.Do(t, req)
				where := fmt.Sprintf("%s %s as %s (%s)", rt.Method, tg.path, a.name, scope)
				if want := a.want(rt.Audience); want != 0 && r.Status != want {
					violations = append(violations, fmt.Sprintf("%s: status %d, want %d: %s", where, r.Status, want, r.Body))
				}
				if r.Status == http.StatusInternalServerError {
					violations = append(violations, fmt.Sprintf("%s: 500: %s", where, r.Body))
				}
				for _, s := range secrets {
					if s != "" && strings.Contains(string(r.Body), s) {
						violations = append(violations, fmt.Sprintf("%s: the response leaks %q: %s", where, s, r.Body))
					}
				}
			}
		}
	}
	require.Empty(t, violations)
	require.Equal(t, before, fingerprint(), "a hostile request changed the victim workspace")
}

// TestRouteScopesAreReal keeps the route table honest: every scope a route names is one of the
// spec's concrete scopes (a typo would lock every bot out of the route).
func TestRouteScopesAreReal(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	for _, rt := range h.Server.Routes() {
		switch rt.Audience {
		case "member", "bot":
			require.True(t, persist.IsScope(rt.Scope), "%s %s names the scope %q", rt.Method, rt.Pattern, rt.Scope)
		default:
			require.Empty(t, rt.Scope, "%s %s", rt.Method, rt.Pattern)
		}
	}
}
