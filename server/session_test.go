package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime"
)

type sessionList struct {
	Sessions []struct {
		ID        string    `json:"id"`
		Method    string    `json:"method"`
		CreatedAt time.Time `json:"created_at"`
		ExpiresAt time.Time `json:"expires_at"`
		Current   bool      `json:"current"`
	} `json:"sessions"`
}

func listSessions(t *testing.T, h *servertest.Harness, token string) sessionList {
	t.Helper()
	r := h.Get(t, "/api/me/sessions", token)
	r.RequireStatus(t, http.StatusOK)
	var l sessionList
	r.Decode(t, &l)
	return l
}

// TestMySessions covers the client's "where you are signed in" view: the list of the caller's
// live sessions and signing out everywhere else.
func TestMySessions(t *testing.T) {
	t.Parallel()

	t.Run("ListsLiveSessionsOnlyAndNeverTokens", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		me := h.NewUser(t)
		phone := persisttest.Session(t, h.Store, me.User.ID)
		gone := persisttest.Session(t, h.Store, me.User.ID)
		h.Post(t, "/api/auth/logout", gone, nil).RequireStatus(t, http.StatusOK)
		stranger := h.NewUser(t)

		r := h.Get(t, "/api/me/sessions", me.Token)
		r.RequireStatus(t, http.StatusOK)
		for _, token := range []string{me.Token, phone, gone} {
			require.NotContains(t, string(r.Body), token)
		}
		l := listSessions(t, h, me.Token)
		require.Len(t, l.Sessions, 2, "the signed-out session is not listed")
		current := 0
		for _, s := range l.Sessions {
			require.NotEmpty(t, s.ID)
			require.NotEmpty(t, s.Method)
			require.True(t, s.ExpiresAt.After(s.CreatedAt))
			if s.Current {
				current++
			}
		}
		require.Equal(t, 1, current, "exactly the calling session is current")
		require.Len(t, listSessions(t, h, stranger.Token).Sessions, 1, "another account's sessions are not shown")
	})

	t.Run("SignOutEverywhereElse", func(t *testing.T) {
		t.Parallel()
		// No periodic check would close the socket within the test: the announcement does.
		h := servertest.New(t, servertest.WithRealtime(func(c *realtime.Config) {
			c.RevalidateInterval = time.Hour
			c.SweepInterval = time.Hour
		}))
		me := h.NewUser(t)
		laptop, phone := persisttest.Session(t, h.Store, me.User.ID), persisttest.Session(t, h.Store, me.User.ID)
		ws := persisttest.Workspace(t, h.Store, me.User.ID)
		phoneSocket, status := h.DialSocket(t, servertest.Dial{Path: "/api/realtime/ws?workspace_id=" + ws.ID, Token: phone})
		require.Equal(t, http.StatusSwitchingProtocols, status)
		stranger := h.NewUser(t)

		r := h.Post(t, "/api/me/sessions/revoke-others", me.Token, nil)
		r.RequireStatus(t, http.StatusOK)
		require.EqualValues(t, 2, r.JSON(t)["revoked"])
		require.EqualValues(t, 1008, phoneSocket.ExpectClose(t), "SPEC §Errors: WebSocket close 1008")
		for _, token := range []string{laptop, phone} {
			h.Get(t, "/api/me", token).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		}
		l := listSessions(t, h, me.Token)
		require.Len(t, l.Sessions, 1)
		require.True(t, l.Sessions[0].Current, "the caller stays signed in")
		require.Len(t, listSessions(t, h, stranger.Token).Sessions, 1, "other accounts are untouched")
		again := h.Post(t, "/api/me/sessions/revoke-others", me.Token, nil)
		again.RequireStatus(t, http.StatusOK)
		require.EqualValues(t, 0, again.JSON(t)["revoked"], "nothing left to end")
	})

	t.Run("ByCookieNeedsTheCSRFHeader", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		me := h.NewUser(t)
		other := persisttest.Session(t, h.Store, me.User.ID)
		req := servertest.Request{Method: http.MethodPost, Path: "/api/me/sessions/revoke-others",
			Cookies: []*http.Cookie{{Name: "cc_session", Value: me.Token}}}
		h.Do(t, req).RequireError(t, http.StatusForbidden, persist.CodeCSRF)
		require.Len(t, listSessions(t, h, other).Sessions, 2, "a refused request ends nothing")
		req.Header = map[string]string{"X-Natter-CSRF": "1"}
		h.Do(t, req).RequireStatus(t, http.StatusOK)
		h.Get(t, "/api/me", other).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})

	t.Run("BotTokensAreRefused", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		owner := h.NewUser(t)
		ws := persisttest.Workspace(t, h.Store, owner.User.ID)
		_, token := persisttest.Bot(t, h.Store, owner.User, ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:admin"}})
		h.Get(t, "/api/me/sessions", token.Token).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
		h.Post(t, "/api/me/sessions/revoke-others", token.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
		require.Len(t, listSessions(t, h, owner.Token).Sessions, 1, "a bot ends no session")
	})
}

// TestSessionAnsweredFromMemory: a session's requests are identified from the hub's cache, and
// still: a sign-out, a sign-out elsewhere and an expired session are refused on the very next
// request; a change of profile shows at once on GET /api/me.
func TestSessionAnsweredFromMemory(t *testing.T) {
	t.Parallel()
	clock := persisttest.NewClock()
	h := servertest.New(t, servertest.WithClock(clock))
	me := h.NewUser(t)
	laptop, phone := persisttest.Session(t, h.Store, me.User.ID), persisttest.Session(t, h.Store, me.User.ID)
	for range 3 { // the first fills the cache, the others are answered from it
		for _, token := range []string{me.Token, laptop, phone} {
			h.Get(t, "/api/workspaces", token).RequireStatus(t, http.StatusOK)
		}
	}

	h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: laptop,
		Body: map[string]any{"display_name": "Renamed"}}).RequireStatus(t, http.StatusOK)
	r := h.Get(t, "/api/me", phone)
	r.RequireStatus(t, http.StatusOK)
	require.Equal(t, "Renamed", r.JSON(t)["user"].(map[string]any)["display_name"])

	h.Post(t, "/api/auth/logout", laptop, nil).RequireStatus(t, http.StatusOK)
	h.Get(t, "/api/workspaces", laptop).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	h.Post(t, "/api/me/sessions/revoke-others", me.Token, nil).RequireStatus(t, http.StatusOK)
	h.Get(t, "/api/workspaces", phone).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	h.Get(t, "/api/workspaces", me.Token).RequireStatus(t, http.StatusOK)

	// A session ends at its expires_at (SPEC §Session), a cached one too.
	l := listSessions(t, h, me.Token)
	require.Len(t, l.Sessions, 1)
	clock.Advance(l.Sessions[0].ExpiresAt.Sub(clock.Now()) - time.Second)
	h.Get(t, "/api/workspaces", me.Token).RequireStatus(t, http.StatusOK)
	clock.Advance(2 * time.Second)
	h.Get(t, "/api/workspaces", me.Token).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
}
