package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// wsEnv is a harness with one workspace and its owner, for the workspace, member, moderation,
// channel and route tests.
type wsEnv struct {
	h     *servertest.Harness
	owner servertest.Actor
	ws    persist.Workspace
}

func newWSEnv(t *testing.T) *wsEnv {
	t.Helper()
	h := servertest.New(t)
	owner := h.NewUser(t)
	return &wsEnv{h: h, owner: owner, ws: persisttest.Workspace(t, h.Store, owner.User.ID)}
}

// join signs in a new human with a role in the workspace.
func (e *wsEnv) join(t *testing.T, role string) servertest.Actor {
	t.Helper()
	a := e.h.NewUser(t)
	persisttest.Member(t, e.h.Store, e.ws.ID, a.User.ID, role)
	return a
}

// bot makes a bot user that is a member (role bot) of the workspace.
func (e *wsEnv) bot(t *testing.T) persist.User {
	t.Helper()
	ctx := context.Background()
	u, err := persist.WithTxV(ctx, e.h.Store, func(tx *persist.Tx) (persist.User, error) {
		return tx.UserCreate(ctx, persist.UserCreateParams{Kind: persist.KindBot, DisplayName: "Robot"})
	})
	require.NoError(t, err)
	persisttest.Member(t, e.h.Store, e.ws.ID, u.ID, persist.RoleBot)
	return u
}

func (e *wsEnv) do(t *testing.T, method, path, token string, body any) *servertest.Response {
	t.Helper()
	return e.h.Do(t, servertest.Request{Method: method, Path: path, Token: token, Body: body})
}

func (e *wsEnv) patch(t *testing.T, path, token string, body any) *servertest.Response {
	t.Helper()
	return e.do(t, http.MethodPatch, path, token, body)
}

// events returns the workspace's logged events, oldest first.
func (e *wsEnv) events(t *testing.T) []persist.Event { return e.h.Events(t, e.ws.ID) }

// logged returns the logged event that a mutation answered with (the "event" of r), checking
// that the answer and the log agree on its id, type and cursor.
func (e *wsEnv) logged(t *testing.T, r *servertest.Response) persist.Event {
	t.Helper()
	answered := e.obj(t, r, "event")
	for _, ev := range e.events(t) {
		if ev.ID == answered["id"] {
			require.Equal(t, ev.Type, answered["type"])
			require.Equal(t, persist.FormatCursor(ev.Cursor), answered["cursor"])
			return ev
		}
	}
	t.Fatalf("event %v is not in the log", answered["id"])
	return persist.Event{}
}

// eventsOf returns the logged events of one type, oldest first.
func (e *wsEnv) eventsOf(t *testing.T, typ string) []persist.Event {
	return e.h.Events(t, e.ws.ID, typ)
}

// obj returns r's JSON object at key.
func (e *wsEnv) obj(t *testing.T, r *servertest.Response, key string) map[string]any {
	t.Helper()
	m, ok := r.JSON(t)[key].(map[string]any)
	require.True(t, ok, "%s is not an object: %s", key, r.Body)
	return m
}

func (e *wsEnv) wsPath(suffix string) string { return "/api/workspaces/" + e.ws.ID + suffix }

// rolesOf decodes a GET /api/workspaces answer into the caller's role in each workspace, by
// workspace id and by slug.
func rolesOf(t *testing.T, r *servertest.Response) (byID, bySlug map[string]string) {
	t.Helper()
	r.RequireStatus(t, http.StatusOK)
	var out struct {
		Workspaces []struct {
			ID   string `json:"id"`
			Slug string `json:"slug"`
			Role string `json:"role"`
		} `json:"workspaces"`
	}
	r.Decode(t, &out)
	byID, bySlug = map[string]string{}, map[string]string{}
	for _, w := range out.Workspaces {
		byID[w.ID], bySlug[w.Slug] = w.Role, w.Role
	}
	return byID, bySlug
}
