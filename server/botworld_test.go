package server_test

import (
	"net/http"
	"testing"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// botWorld is a harness with one workspace and a person in every role, plus an outsider.
type botWorld struct {
	h                                         *servertest.Harness
	ws                                        persist.Workspace
	owner, moderator, member, guest, outsider servertest.Actor
}

func newBotWorld(t *testing.T, opts ...servertest.Option) *botWorld {
	t.Helper()
	h := servertest.New(t, opts...)
	w := &botWorld{h: h, owner: h.NewUser(t), moderator: h.NewUser(t), member: h.NewUser(t), guest: h.NewUser(t), outsider: h.NewUser(t)}
	w.ws = persisttest.Workspace(t, h.Store, w.owner.User.ID)
	persisttest.Member(t, h.Store, w.ws.ID, w.moderator.User.ID, persist.RoleModerator)
	persisttest.Member(t, h.Store, w.ws.ID, w.member.User.ID, persist.RoleMember)
	persisttest.Member(t, h.Store, w.ws.ID, w.guest.User.ID, persist.RoleGuest)
	return w
}

// createdBot is the answer of bot creation.
type createdBot struct {
	Bot      persist.PublicUser `json:"bot"`
	BotToken *persist.BotToken  `json:"bot_token"`
}

func (w *botWorld) botsPath() string { return "/api/workspaces/" + w.ws.ID + "/bots" }

// createBot creates a bot as a through the API and requires status.
func (w *botWorld) createBot(t *testing.T, as servertest.Actor, body map[string]any, status int) createdBot {
	t.Helper()
	r := w.h.Post(t, w.botsPath(), as.Token, body)
	r.RequireStatus(t, status)
	var out createdBot
	r.Decode(t, &out)
	return out
}

// serviceBot creates a service bot as the owner with scopes and returns it with its raw token.
func (w *botWorld) serviceBot(t *testing.T, scopes ...string) (persist.PublicUser, string) {
	t.Helper()
	b := w.createBot(t, w.owner, map[string]any{"display_name": "Service", "scopes": scopes}, http.StatusCreated)
	return b.Bot, b.BotToken.Token
}

// tokens lists a bot's tokens in the world's workspace as a.
func (w *botWorld) tokens(t *testing.T, as servertest.Actor, botID string) []persist.BotToken {
	t.Helper()
	r := w.h.Get(t, w.botsPath()+"/"+botID+"/tokens", as.Token)
	r.RequireStatus(t, http.StatusOK)
	var out struct {
		BotTokens []persist.BotToken `json:"bot_tokens"`
	}
	r.Decode(t, &out)
	return out.BotTokens
}
