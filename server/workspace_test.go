package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestWorkspaceCreate(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	create := func(token string, body any) *servertest.Response {
		return h.Post(t, "/api/workspaces", token, body)
	}

	t.Run("CreatorBecomesOwnerAndSlugDefaultsToName", func(t *testing.T) {
		t.Parallel()
		me := h.NewUser(t)
		r := create(me.Token, map[string]any{"name": "  Team Rocket Launch  "})
		r.RequireStatus(t, http.StatusCreated)
		var got struct{ Workspace map[string]any }
		r.Decode(t, &got)
		w := got.Workspace
		require.Equal(t, "Team Rocket Launch", w["name"])
		require.Equal(t, "team-rocket-launch", w["slug"])
		require.Equal(t, "owner", w["role"])
		require.True(t, strings.HasPrefix(w["id"].(string), "wsp_"))
		require.Regexp(t, `^T[A-Z0-9]{16}$`, w["route_id"])
		require.NotContains(t, w, "icon_url")

		m := h.Get(t, "/api/workspaces/"+w["id"].(string)+"/members", me.Token).JSON(t)["members"].([]any)
		require.Len(t, m, 1)
		require.Equal(t, "owner", m[0].(map[string]any)["role"])
	})

	t.Run("ExplicitSlugIsSlugified", func(t *testing.T) {
		t.Parallel()
		me := h.NewUser(t)
		r := create(me.Token, map[string]any{"name": "Whatever", "slug": "My Own Slug!"})
		r.RequireStatus(t, http.StatusCreated)
		require.Equal(t, "my-own-slug", r.JSON(t)["workspace"].(map[string]any)["slug"])
	})

	t.Run("ReservedSlugsAre400", func(t *testing.T) {
		t.Parallel()
		me := h.NewUser(t)
		for _, body := range []map[string]any{
			{"name": "Anything", "slug": "clickclack"},
			{"name": "Anything", "slug": "ClickClack"},
			{"name": "Anything", "slug": "guests"},
			{"name": "Guests"}, // the default slug is reserved too
			{"name": "Click Clack", "slug": "  GUESTS "},
		} {
			create(me.Token, body).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
		require.Empty(t, h.Get(t, "/api/workspaces", me.Token).JSON(t)["workspaces"])
	})

	t.Run("InvalidNamesAre400", func(t *testing.T) {
		t.Parallel()
		me := h.NewUser(t)
		for _, body := range []map[string]any{
			{"name": ""},
			{"name": "   "},
			{"name": strings.Repeat("é", persist.MaxWorkspaceNameLength+1)},
			{"name": "!!!"}, // no letter or digit for a slug
		} {
			create(me.Token, body).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
		create(me.Token, map[string]any{"name": strings.Repeat("é", persist.MaxWorkspaceNameLength)}).RequireStatus(t, http.StatusCreated)
	})

	t.Run("TakenSlugIs409", func(t *testing.T) {
		t.Parallel()
		a, b := h.NewUser(t), h.NewUser(t)
		create(a.Token, map[string]any{"name": "Taken Name"}).RequireStatus(t, http.StatusCreated)
		create(b.Token, map[string]any{"name": "taken name"}).RequireError(t, http.StatusConflict, persist.CodeConflict)
		create(b.Token, map[string]any{"name": "Other", "slug": "taken-name"}).RequireError(t, http.StatusConflict, persist.CodeConflict)
	})

	t.Run("NeedsSignIn", func(t *testing.T) {
		t.Parallel()
		create("", map[string]any{"name": "x"}).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
	})
}

// TestWorkspaceSlugsUniqueUnderParallelCreates races creates for one slug: exactly one wins,
// every other gets 409, and the database holds one workspace with that slug.
func TestWorkspaceSlugsUniqueUnderParallelCreates(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	const n = 12
	users := make([]servertest.Actor, n)
	for i := range users {
		users[i] = h.NewUser(t)
	}
	statuses := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			statuses[i] = h.Post(t, "/api/workspaces", users[i].Token, map[string]any{"name": "Race Day"}).Status
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for _, s := range statuses {
		if s == http.StatusCreated {
			won++
			continue
		}
		require.Equal(t, http.StatusConflict, s)
	}
	require.Equal(t, 1, won)
	total := 0
	for _, u := range users {
		for _, w := range h.Get(t, "/api/workspaces", u.Token).JSON(t)["workspaces"].([]any) {
			require.Equal(t, "race-day", w.(map[string]any)["slug"])
			total++
		}
	}
	require.Equal(t, 1, total)
}

func TestWorkspaceReadAccess(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t)
	guest := e.join(t, persist.RoleGuest)
	outsider := e.h.NewUser(t)
	second := persisttest.Workspace(t, e.h.Store, outsider.User.ID)
	persisttest.Member(t, e.h.Store, second.ID, e.owner.User.ID, persist.RoleMember)

	t.Run("ListShowsOnlyOwnWorkspacesWithRole", func(t *testing.T) {
		t.Parallel()
		var got struct{ Workspaces []map[string]any }
		e.h.Get(t, "/api/workspaces", e.owner.Token).Decode(t, &got)
		roles := map[string]string{}
		for _, w := range got.Workspaces {
			roles[w["id"].(string)] = w["role"].(string)
		}
		require.Equal(t, map[string]string{e.ws.ID: "owner", second.ID: "member"}, roles)

		e.h.Get(t, "/api/workspaces", outsider.Token).Decode(t, &got)
		require.Len(t, got.Workspaces, 1)
		require.Equal(t, second.ID, got.Workspaces[0]["id"])
	})

	t.Run("GetForMembersIncludingGuests", func(t *testing.T) {
		t.Parallel()
		r := e.h.Get(t, e.wsPath(""), guest.Token)
		r.RequireStatus(t, http.StatusOK)
		w := e.obj(t, r, "workspace")
		require.Equal(t, e.ws.Slug, w["slug"])
		require.Equal(t, "guest", w["role"])
	})

	t.Run("OtherWorkspaceIs403", func(t *testing.T) {
		t.Parallel()
		e.h.Get(t, e.wsPath(""), outsider.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.h.Get(t, e.wsPath("/members"), outsider.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.h.Get(t, e.wsPath("/channels"), outsider.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})

	t.Run("UnknownIs404", func(t *testing.T) {
		t.Parallel()
		e.h.Get(t, "/api/workspaces/wsp_nope", e.owner.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	})
}

func TestWorkspaceUpdate(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t)
	mod := e.join(t, persist.RoleModerator)
	member := e.join(t, persist.RoleMember)
	guest := e.join(t, persist.RoleGuest)
	outsider := e.h.NewUser(t)
	path := e.wsPath("")

	t.Run("OwnerAndModeratorMayChangeNameAndSlug", func(t *testing.T) {
		t.Parallel()
		r := e.patch(t, path, e.owner.Token, map[string]any{"name": "Renamed"})
		r.RequireStatus(t, http.StatusOK)
		w := e.obj(t, r, "workspace")
		require.Equal(t, "Renamed", w["name"])
		require.Equal(t, e.ws.Slug, w["slug"], "omitted fields stay")
		require.Equal(t, "workspace.updated", e.logged(t, r).Type)

		r = e.patch(t, path, mod.Token, map[string]any{"slug": "Fresh Slug"})
		r.RequireStatus(t, http.StatusOK)
		w = e.obj(t, r, "workspace")
		require.Equal(t, "fresh-slug", w["slug"])
		require.Equal(t, "Renamed", w["name"])
		require.Equal(t, "moderator", w["role"])

		logged := e.logged(t, r)
		var payload struct{ Workspace map[string]any }
		require.NoError(t, json.Unmarshal(logged.Payload, &payload))
		require.Equal(t, "fresh-slug", payload.Workspace["slug"])
		require.NotContains(t, payload.Workspace, "role", "the payload is not any one reader's view")
		require.Equal(t, mod.User.ID, logged.ActorID)
	})

	t.Run("MembersGuestsAndOutsidersAreRefused", func(t *testing.T) {
		t.Parallel()
		e.patch(t, path, member.Token, map[string]any{"name": "No"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.patch(t, path, guest.Token, map[string]any{"name": "No"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.patch(t, path, outsider.Token, map[string]any{"name": "No"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})

	t.Run("ReservedSlugIs400", func(t *testing.T) {
		t.Parallel()
		for _, slug := range []string{"clickclack", "Guests", ""} {
			e.patch(t, path, e.owner.Token, map[string]any{"slug": slug}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
	})

	t.Run("TakenSlugIs409", func(t *testing.T) {
		t.Parallel()
		other := persisttest.Workspace(t, e.h.Store, outsider.User.ID)
		e.patch(t, path, e.owner.Token, map[string]any{"slug": other.Slug}).RequireError(t, http.StatusConflict, persist.CodeConflict)
	})

	t.Run("IconMustResolve", func(t *testing.T) {
		t.Parallel()
		for _, icon := range []string{"/api/uploads/upl_01jabcdefghjkmnpqrstvwxyz0", "upl_nope", "https://example.com/x.png"} {
			e.patch(t, path, e.owner.Token, map[string]any{"icon_url": icon}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
		r := e.patch(t, path, e.owner.Token, map[string]any{"icon_url": ""})
		r.RequireStatus(t, http.StatusOK)
		require.NotContains(t, e.obj(t, r, "workspace"), "icon_url")
	})

	t.Run("EmptyPatchIs400", func(t *testing.T) {
		t.Parallel()
		e.patch(t, path, e.owner.Token, map[string]any{}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})
}

func TestWorkspaceDelete(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t)
	mod := e.join(t, persist.RoleModerator)
	member := e.join(t, persist.RoleMember)
	general := persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")
	persisttest.DM(t, e.h.Store, e.ws.ID, e.owner.User.ID, member.User.ID)
	other := persisttest.Workspace(t, e.h.Store, member.User.ID)
	otherChannel := persisttest.Channel(t, e.h.Store, persist.ActorFor(member.User), other.ID, "general")
	path := e.wsPath("")

	e.do(t, http.MethodDelete, path, mod.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	e.do(t, http.MethodDelete, path, member.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	e.do(t, http.MethodDelete, "/api/workspaces/"+other.ID, e.owner.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)

	r := e.do(t, http.MethodDelete, path, e.owner.Token, nil)
	r.RequireStatus(t, http.StatusNoContent)
	require.Empty(t, r.Body)

	e.h.Get(t, path, e.owner.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	e.do(t, http.MethodDelete, path, e.owner.Token, nil).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	e.patch(t, "/api/channels/"+general.ID, e.owner.Token, map[string]any{"name": "x"}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	require.Empty(t, e.events(t), "the event log went with the workspace")

	// The member's own workspace is untouched.
	channels := e.h.Get(t, "/api/workspaces/"+other.ID+"/channels", member.Token).JSON(t)["channels"].([]any)
	require.Len(t, channels, 1)
	require.Equal(t, otherChannel.ID, channels[0].(map[string]any)["id"])
}

func TestWorkspaceTransferOwnership(t *testing.T) {
	t.Parallel()
	transfer := func(e *wsEnv, token, userID string) *servertest.Response {
		return e.h.Post(t, e.wsPath("/transfer-ownership"), token, map[string]any{"user_id": userID})
	}
	roleOf := func(e *wsEnv, userID string) string {
		var page struct{ Members []map[string]any }
		e.h.Get(t, e.wsPath("/members"), e.owner.Token).Decode(t, &page)
		for _, m := range page.Members {
			if m["user"].(map[string]any)["id"] == userID {
				return m["role"].(string)
			}
		}
		return ""
	}

	t.Run("ToAMemberFormerOwnerBecomesModerator", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		heir := e.join(t, persist.RoleMember)
		r := transfer(e, e.owner.Token, heir.User.ID)
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, "moderator", e.obj(t, r, "workspace")["role"], "the caller's new role")
		ev := e.logged(t, r)
		require.Equal(t, "workspace.ownership_transferred", ev.Type)
		var payload map[string]any
		require.NoError(t, json.Unmarshal(ev.Payload, &payload))
		require.Equal(t, e.owner.User.ID, payload["previous_owner_id"])
		require.Equal(t, heir.User.ID, payload["owner_id"])

		require.Equal(t, "owner", roleOf(e, heir.User.ID))
		require.Equal(t, "moderator", roleOf(e, e.owner.User.ID))
		// The new owner now holds owner-only powers, the old one no longer does.
		transfer(e, e.owner.Token, heir.User.ID).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.do(t, http.MethodDelete, e.wsPath(""), e.owner.Token, nil).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		transfer(e, heir.Token, e.owner.User.ID).RequireStatus(t, http.StatusOK)
	})

	t.Run("ToAModerator", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		mod := e.join(t, persist.RoleModerator)
		transfer(e, e.owner.Token, mod.User.ID).RequireStatus(t, http.StatusOK)
		require.Equal(t, "owner", roleOf(e, mod.User.ID))
	})

	t.Run("TargetMustBeAHumanMemberOrModerator", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		guest := e.join(t, persist.RoleGuest)
		bot := e.bot(t)
		outsider := e.h.NewUser(t)
		transfer(e, e.owner.Token, guest.User.ID).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		transfer(e, e.owner.Token, bot.ID).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		transfer(e, e.owner.Token, e.owner.User.ID).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		transfer(e, e.owner.Token, outsider.User.ID).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		transfer(e, e.owner.Token, "").RequireError(t, http.StatusNotFound, persist.CodeNotFound)
		require.Equal(t, "owner", roleOf(e, e.owner.User.ID))
		require.Empty(t, e.eventsOf(t, "workspace.ownership_transferred"))
	})

	t.Run("OwnerOnly", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		mod := e.join(t, persist.RoleModerator)
		member := e.join(t, persist.RoleMember)
		transfer(e, mod.Token, member.User.ID).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		transfer(e, mod.Token, mod.User.ID).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		transfer(e, member.Token, member.User.ID).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})

	t.Run("ConcurrentTransfersLeaveOneOwner", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		heirs := []servertest.Actor{e.join(t, persist.RoleMember), e.join(t, persist.RoleMember), e.join(t, persist.RoleModerator)}
		var wg sync.WaitGroup
		statuses := make([]int, len(heirs))
		for i, heir := range heirs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = transfer(e, e.owner.Token, heir.User.ID).Status
			}()
		}
		wg.Wait()
		owners := 0
		var page struct{ Members []map[string]any }
		e.h.Get(t, e.wsPath("/members?role=owner"), e.owner.Token).Decode(t, &page)
		owners = len(page.Members)
		require.Equal(t, 1, owners)
		require.ElementsMatch(t, []int{http.StatusOK, http.StatusForbidden, http.StatusForbidden}, statuses)
	})
}
