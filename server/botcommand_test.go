package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// putMenu replaces the menu of the bot behind token.
func putMenu(t *testing.T, h *servertest.Harness, token string, commands any) *servertest.Response {
	t.Helper()
	return h.Do(t, servertest.Request{Method: http.MethodPut, Path: "/api/bots/self/commands", Token: token,
		Body: map[string]any{"commands": commands}})
}

// listCommands returns a workspace's merged menus as token sees them.
func listCommands(t *testing.T, h *servertest.Harness, workspaceID, token string) []persist.WorkspaceBotCommand {
	t.Helper()
	r := h.Get(t, "/api/workspaces/"+workspaceID+"/bot-commands", token)
	r.RequireStatus(t, http.StatusOK)
	var out struct {
		BotCommands []persist.WorkspaceBotCommand `json:"bot_commands"`
	}
	r.Decode(t, &out)
	return out.BotCommands
}

func menuOf(t *testing.T, r *servertest.Response) []persist.BotCommand {
	t.Helper()
	r.RequireStatus(t, http.StatusOK)
	var out struct {
		BotCommands []persist.BotCommand `json:"bot_commands"`
	}
	r.Decode(t, &out)
	return out.BotCommands
}

func TestBotCommandMenus(t *testing.T) {
	t.Parallel()
	w := newBotWorld(t)

	t.Run("MergedListingSortedByHandleThenCommand", func(t *testing.T) {
		t.Parallel()
		v := newBotWorld(t)
		zeta := v.createBot(t, v.owner, map[string]any{"display_name": "Zeta", "handle": "zeta", "avatar_url": "https://img.example/z.png"}, http.StatusCreated)
		alpha := v.createBot(t, v.owner, map[string]any{"display_name": "Alpha", "handle": "alpha"}, http.StatusCreated)
		plain := v.createBot(t, v.owner, map[string]any{"display_name": "No handle"}, http.StatusCreated)
		putMenu(t, v.h, zeta.BotToken.Token, []map[string]any{{"command": "b", "description": "B"}, {"command": "/A", "description": "A", "args_hint": "<x>"}}).RequireStatus(t, http.StatusOK)
		putMenu(t, v.h, alpha.BotToken.Token, []map[string]any{{"command": "z", "description": "Z"}}).RequireStatus(t, http.StatusOK)
		putMenu(t, v.h, plain.BotToken.Token, []map[string]any{{"command": "a", "description": "A"}}).RequireStatus(t, http.StatusOK)

		got := listCommands(t, v.h, v.ws.ID, v.guest.Token)
		var order []string
		for _, c := range got {
			order = append(order, c.Bot.Handle+c.Command)
		}
		require.Equal(t, []string{"alpha/z", "zeta/a", "zeta/b", "/a"}, order)
		avatar := "https://img.example/z.png"
		require.Equal(t, persist.BotCommandBot{ID: zeta.Bot.ID, Handle: "zeta", DisplayName: "Zeta", AvatarURL: &avatar}, got[1].Bot)
		require.Equal(t, "<x>", got[1].ArgsHint)
		require.Equal(t, plain.Bot.ID, got[3].Bot.ID)

		// avatar_url is present on every entry, null for a bot without one.
		raw := v.h.Get(t, "/api/workspaces/"+v.ws.ID+"/bot-commands", v.guest.Token).JSON(t)["bot_commands"].([]any)
		for i, want := range []any{nil, avatar, avatar, nil} {
			bot := raw[i].(map[string]any)["bot"].(map[string]any)
			require.Contains(t, bot, "avatar_url")
			require.Equal(t, want, bot["avatar_url"])
		}

		// Bot tokens with workspaces:read bound to the workspace may list too.
		require.Len(t, listCommands(t, v.h, v.ws.ID, alpha.BotToken.Token), 4)
	})
	t.Run("ReplaceIsAtomicAndKeepsStayingEntries", func(t *testing.T) {
		t.Parallel()
		_, token := w.serviceBot(t, "commands:write")
		first := menuOf(t, putMenu(t, w.h, token, []map[string]any{{"command": "a", "description": "A"}, {"command": "b", "description": "B"}}))
		require.Len(t, first, 2)
		second := menuOf(t, putMenu(t, w.h, token, []map[string]any{{"command": "c", "description": "C"}, {"command": "B", "description": "B changed"}}))
		require.Len(t, second, 2)
		require.Equal(t, "/b", second[0].Command)
		require.Equal(t, first[1].ID, second[0].ID, "an entry that stays keeps its id")
		require.Equal(t, first[1].CreatedAt, second[0].CreatedAt)
		require.Equal(t, "B changed", second[0].Description)
		require.Equal(t, "/c", second[1].Command)
		require.Empty(t, menuOf(t, putMenu(t, w.h, token, []map[string]any{})), "an empty menu clears it")
	})
	t.Run("InvalidMenusChangeNothing", func(t *testing.T) {
		t.Parallel()
		bot, token := w.serviceBot(t, "commands:write")
		menuOf(t, putMenu(t, w.h, token, []map[string]any{{"command": "keep", "description": "Kept"}}))
		tooMany := make([]map[string]any, 100+1) // SPEC §Limits: at most 100 commands
		for i := range tooMany {
			tooMany[i] = map[string]any{"command": fmt.Sprintf("c%d", i), "description": "d"}
		}
		for _, bad := range [][]map[string]any{
			tooMany,
			{{"command": "dup", "description": "one"}, {"command": "/DUP", "description": "two"}},
			{{"command": "ok", "description": "fine"}, {"command": "no", "description": ""}},
			{{"command": "long", "description": strings.Repeat("é", 101)}},
			{{"command": "hint", "description": "d", "args_hint": strings.Repeat("h", 101)}},
			{{"command": "bad cmd", "description": "d"}},
			{{"command": "/", "description": "d"}},
		} {
			putMenu(t, w.h, token, bad).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
		w.h.Do(t, servertest.Request{Method: http.MethodPut, Path: "/api/bots/self/commands", Token: token, Body: map[string]any{}}).
			RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		// A full menu of exactly 100 with maximal texts is fine.
		full := tooMany[:100]
		full[0] = map[string]any{"command": "c0", "description": strings.Repeat("é", 100), "args_hint": strings.Repeat("h", 100)}
		require.Len(t, menuOf(t, putMenu(t, w.h, token, full)), 100)
		menuOf(t, putMenu(t, w.h, token, []map[string]any{{"command": "keep", "description": "Kept"}}))
		putMenu(t, w.h, token, tooMany).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		var mine []string
		for _, c := range listCommands(t, w.h, w.ws.ID, w.owner.Token) {
			if c.Bot.ID == bot.ID {
				mine = append(mine, c.Command)
			}
		}
		require.Equal(t, []string{"/keep"}, mine)
	})
	t.Run("MenusArePerWorkspace", func(t *testing.T) {
		t.Parallel()
		v := newBotWorld(t)
		other := persisttest.Workspace(t, v.h.Store, v.owner.User.ID)
		b, token := v.serviceBot(t, "bot:write", "workspaces:read")
		persisttest.Member(t, v.h.Store, other.ID, b.ID, persist.RoleBot)
		there := persisttest.BotToken(t, v.h.Store, v.owner.User, other.ID, b.ID, "bot:write")
		menuOf(t, putMenu(t, v.h, token, []map[string]any{{"command": "here", "description": "Here"}}))
		menuOf(t, putMenu(t, v.h, there.Token, []map[string]any{{"command": "there", "description": "There"}}))
		require.Equal(t, "/here", listCommands(t, v.h, v.ws.ID, v.owner.Token)[0].Command)
		require.Equal(t, "/there", listCommands(t, v.h, other.ID, v.owner.Token)[0].Command)
		// The token bound to the first workspace cannot read the second's menus.
		v.h.Get(t, "/api/workspaces/"+other.ID+"/bot-commands", token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})
	t.Run("Access", func(t *testing.T) {
		t.Parallel()
		_, noScope := w.serviceBot(t, "bot:read")
		putMenu(t, w.h, noScope, []map[string]any{}).RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
		putMenu(t, w.h, w.owner.Token, []map[string]any{}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		_, noRead := w.serviceBot(t, "commands:write")
		w.h.Get(t, "/api/workspaces/"+w.ws.ID+"/bot-commands", noRead).RequireError(t, http.StatusForbidden, persist.CodeMissingScope)
		w.h.Get(t, "/api/workspaces/"+w.ws.ID+"/bot-commands", w.outsider.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		w.h.Get(t, "/api/workspaces/"+w.ws.ID+"/bot-commands", "").RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})
}
