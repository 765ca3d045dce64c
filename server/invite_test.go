package server_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func (e *wsEnv) invite(t *testing.T, token string, body any) *servertest.Response {
	t.Helper()
	return e.h.Post(t, e.wsPath("/invites"), token, body)
}

func (e *wsEnv) inviteToken(t *testing.T, token string, body any) string {
	t.Helper()
	r := e.invite(t, token, body)
	r.RequireStatus(t, http.StatusCreated)
	return e.obj(t, r, "invite")["token"].(string)
}

func (e *wsEnv) accept(t *testing.T, token, invite string) *servertest.Response {
	t.Helper()
	return e.h.Post(t, "/api/invites/accept", token, map[string]any{"token": invite})
}

func TestInviteCreate(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t)
	mod := e.join(t, persist.RoleModerator)
	member := e.join(t, persist.RoleMember)
	guest := e.join(t, persist.RoleGuest)

	t.Run("ShapeAndDefaults", func(t *testing.T) {
		t.Parallel()
		r := e.invite(t, e.owner.Token, map[string]any{})
		r.RequireStatus(t, http.StatusCreated)
		inv := e.obj(t, r, "invite")
		require.True(t, strings.HasPrefix(inv["token"].(string), persist.PrefixInviteToken))
		require.True(t, strings.HasPrefix(inv["id"].(string), persist.PrefixInvite))
		require.Equal(t, "member", inv["role"])
		require.Equal(t, e.ws.ID, inv["workspace_id"])
		created, err := time.Parse(time.RFC3339Nano, inv["created_at"].(string))
		require.NoError(t, err)
		expires, err := time.Parse(time.RFC3339Nano, inv["expires_at"].(string))
		require.NoError(t, err)
		require.Equal(t, persist.InviteDefaultLifetime, expires.Sub(created))

		r = e.invite(t, mod.Token, map[string]any{"role": "guest", "expires_in_hours": 2})
		r.RequireStatus(t, http.StatusCreated)
		inv = e.obj(t, r, "invite")
		require.Equal(t, "guest", inv["role"])
	})

	t.Run("Refusals", func(t *testing.T) {
		t.Parallel()
		e.invite(t, member.Token, map[string]any{}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.invite(t, guest.Token, map[string]any{}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.invite(t, mod.Token, map[string]any{"role": "moderator"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.invite(t, e.owner.Token, map[string]any{"role": "owner"}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		e.invite(t, e.owner.Token, map[string]any{"role": "bot"}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		e.invite(t, e.owner.Token, map[string]any{"expires_in_hours": -1}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		e.invite(t, e.owner.Token, map[string]any{"expires_in_hours": 721}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		e.invite(t, e.owner.Token, map[string]any{"expires_in_hours": int64(1) << 50}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		e.invite(t, e.h.NewUser(t).Token, map[string]any{}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})
}

func TestInviteAccept(t *testing.T) {
	t.Parallel()

	t.Run("JoinsWithTheInvitedRoleOnce", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		token := e.inviteToken(t, e.owner.Token, map[string]any{"role": "moderator"})
		newcomer, late := e.h.NewUser(t), e.h.NewUser(t)
		r := e.accept(t, newcomer.Token, token)
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, e.ws.ID, e.obj(t, r, "workspace")["id"])
		require.Equal(t, "moderator", e.obj(t, r, "workspace")["role"])
		m := e.obj(t, r, "member")
		require.Equal(t, "moderator", m["role"])
		require.Equal(t, newcomer.User.ID, m["user"].(map[string]any)["id"])
		e.h.Get(t, e.wsPath("/moderation/members"), newcomer.Token).RequireStatus(t, http.StatusOK)

		used := e.accept(t, late.Token, token)
		used.RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		unknown := e.accept(t, late.Token, persist.PrefixInviteToken+"unknown")
		unknown.RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		require.Equal(t, string(used.Body), string(unknown.Body), "used and unknown tokens look the same")
		e.h.Get(t, e.wsPath(""), late.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})

	t.Run("ExpiredLooksUnknown", func(t *testing.T) {
		t.Parallel()
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		var mu sync.Mutex
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		h := servertest.New(t, servertest.WithStoreOptions(persisttest.WithClock(clock)))
		owner := h.NewUser(t)
		e := &wsEnv{h: h, owner: owner, ws: persisttest.Workspace(t, h.Store, owner.User.ID)}
		token := e.inviteToken(t, owner.Token, map[string]any{"expires_in_hours": 1})
		mu.Lock()
		now = now.Add(time.Hour)
		mu.Unlock()
		expired := e.accept(t, h.NewUser(t).Token, token)
		expired.RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		unknown := e.accept(t, h.NewUser(t).Token, "ivt_nothing")
		require.Equal(t, string(unknown.Body), string(expired.Body))
	})

	t.Run("ExistingMemberKeepsRoleAndInviteStaysUnused", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		mod := e.join(t, persist.RoleModerator)
		token := e.inviteToken(t, e.owner.Token, map[string]any{"role": "guest"})
		r := e.accept(t, mod.Token, token)
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, "moderator", e.obj(t, r, "member")["role"])
		newcomer := e.h.NewUser(t)
		r = e.accept(t, newcomer.Token, token)
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, "guest", e.obj(t, r, "member")["role"])
	})

	t.Run("GuestJoinsTheWaitingRoom", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")
		token := e.inviteToken(t, e.owner.Token, map[string]any{"role": "guest"})
		newcomer := e.h.NewUser(t)
		e.accept(t, newcomer.Token, token).RequireStatus(t, http.StatusOK)
		created := e.eventsOf(t, "channel.created")
		require.Len(t, created, 2, "general, then the guest channel at join")
		require.Equal(t, newcomer.User.ID, created[1].ActorID)
		require.Equal(t, []string{"guest"}, e.channelNames(t, newcomer.Token))
	})

	t.Run("ParallelAcceptsSpendItOnce", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		token := e.inviteToken(t, e.owner.Token, map[string]any{})
		people := []servertest.Actor{e.h.NewUser(t), e.h.NewUser(t), e.h.NewUser(t), e.h.NewUser(t)}
		statuses := make([]int, len(people))
		var wg sync.WaitGroup
		for i, p := range people {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = e.accept(t, p.Token, token).Status
			}()
		}
		wg.Wait()
		require.Equal(t, 1, countOf(statuses, http.StatusOK))
		require.Equal(t, len(people)-1, countOf(statuses, http.StatusNotFound))
		var page memberPage
		e.h.Get(t, e.wsPath("/members"), e.owner.Token).Decode(t, &page)
		require.Len(t, page.Members, 2)
	})
}
