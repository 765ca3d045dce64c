package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestChannelUpdate(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t)
	mod := e.join(t, persist.RoleModerator)
	member := e.join(t, persist.RoleMember)
	guest := e.join(t, persist.RoleGuest)
	outsider := e.h.NewUser(t)
	owner := persist.ActorFor(e.owner.User)
	path := func(c persist.Channel) string { return "/api/channels/" + c.ID }

	t.Run("OwnerPatchesAnySubset", func(t *testing.T) {
		t.Parallel()
		c := persisttest.Channel(t, e.h.Store, owner, e.ws.ID, "subset")
		r := e.patch(t, path(c), e.owner.Token, map[string]any{"display_title": " Shiny ", "sidebar_section": "Work",
			"external_url": "http://example.com/x", "external_ref": "ref-1", "external_managed": true, "kind": "ops"})
		r.RequireStatus(t, http.StatusOK)
		got := channelOf(t, r)
		require.Equal(t, "subset", got.Name, "omitted fields stay")
		require.Equal(t, "Shiny", got.DisplayTitle)
		require.Equal(t, "Work", got.SidebarSection)
		require.Equal(t, "http://example.com/x", got.ExternalURL)
		require.Equal(t, "ref-1", got.ExternalRef)
		require.True(t, got.ExternalManaged)
		require.Equal(t, "ops", got.Kind)

		r = e.patch(t, path(c), e.owner.Token, map[string]any{"name": "Renamed Subset"})
		got = channelOf(t, r)
		require.Equal(t, "renamed-subset", got.Name)
		require.Equal(t, "Shiny", got.DisplayTitle)
		require.Equal(t, c.RouteID, got.RouteID, "route ids never change")
	})

	t.Run("EmptyStringClearsNullableFields", func(t *testing.T) {
		t.Parallel()
		c := persisttest.Channel(t, e.h.Store, owner, e.ws.ID, "clearing")
		e.patch(t, path(c), e.owner.Token, map[string]any{"display_title": "T", "sidebar_section": "S",
			"external_url": "https://example.com", "external_ref": "R"}).RequireStatus(t, http.StatusOK)
		r := e.patch(t, path(c), e.owner.Token, map[string]any{"display_title": "", "sidebar_section": "",
			"external_url": "", "external_ref": ""})
		r.RequireStatus(t, http.StatusOK)
		raw := e.obj(t, r, "channel")
		for _, k := range []string{"display_title", "sidebar_section", "external_url", "external_ref"} {
			require.NotContains(t, raw, k)
		}
		e.patch(t, path(c), e.owner.Token, map[string]any{"name": ""}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		e.patch(t, path(c), e.owner.Token, map[string]any{"kind": ""}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})

	t.Run("ArchiveAndUnarchiveEmitUpdatedWithArchived", func(t *testing.T) {
		t.Parallel()
		c := persisttest.Channel(t, e.h.Store, owner, e.ws.ID, "archiving")
		r := e.patch(t, path(c), e.owner.Token, map[string]any{"archived": true})
		r.RequireStatus(t, http.StatusOK)
		got := channelOf(t, r)
		require.True(t, got.Archived)
		require.NotNil(t, got.ArchivedAt)
		ev := e.logged(t, r)
		require.Equal(t, "channel.updated", ev.Type)
		require.Equal(t, c.ID, ev.ChannelID)
		var payload struct {
			Channel  persist.Channel
			Archived bool
		}
		require.NoError(t, json.Unmarshal(ev.Payload, &payload))
		require.True(t, payload.Archived)
		require.True(t, payload.Channel.Archived)

		again := channelOf(t, e.patch(t, path(c), e.owner.Token, map[string]any{"archived": true}))
		require.Equal(t, got.ArchivedAt, again.ArchivedAt, "archiving again keeps the first instant")

		r = e.patch(t, path(c), e.owner.Token, map[string]any{"archived": false})
		got = channelOf(t, r)
		require.False(t, got.Archived)
		require.Nil(t, got.ArchivedAt)
		require.NoError(t, json.Unmarshal(e.logged(t, r).Payload, &payload))
		require.False(t, payload.Archived)
	})

	t.Run("OnlyTheOwnerMay", func(t *testing.T) {
		t.Parallel()
		c := persisttest.Channel(t, e.h.Store, owner, e.ws.ID, "guarded")
		for _, token := range []string{mod.Token, member.Token, guest.Token} {
			r := e.patch(t, path(c), token, map[string]any{"display_title": "mine"})
			r.RequireError(t, http.StatusForbidden, persist.CodeForbidden)
			require.Equal(t, "workspace owner permission required", r.JSON(t)["error"])
		}
		e.patch(t, path(c), outsider.Token, map[string]any{"display_title": "mine"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		require.Empty(t, channelOf(t, e.patch(t, path(c), e.owner.Token, map[string]any{"kind": "public"})).DisplayTitle)
	})

	t.Run("OtherWorkspaceOwnerIsRefused", func(t *testing.T) {
		t.Parallel()
		c := persisttest.Channel(t, e.h.Store, owner, e.ws.ID, "foreign")
		persisttest.Workspace(t, e.h.Store, outsider.User.ID)
		e.patch(t, path(c), outsider.Token, map[string]any{"name": "stolen"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})

	t.Run("InvalidPatchesAre400", func(t *testing.T) {
		t.Parallel()
		c := persisttest.Channel(t, e.h.Store, owner, e.ws.ID, "strict")
		for _, body := range []map[string]any{
			{},
			{"display_title": strings.Repeat("x", 201)}, // SPEC §Limits: at most 200
			{"external_url": "mailto:someone@example.com"},
			{"kind": "Two Words"},
			{"archived": "yes"},
		} {
			r := e.patch(t, path(c), e.owner.Token, body)
			require.Equal(t, http.StatusBadRequest, r.Status, "%v: %s", body, r.Body)
		}
	})

	t.Run("NameConflictIs409", func(t *testing.T) {
		t.Parallel()
		persisttest.Channel(t, e.h.Store, owner, e.ws.ID, "taken-one")
		c := persisttest.Channel(t, e.h.Store, owner, e.ws.ID, "free-one")
		e.patch(t, path(c), e.owner.Token, map[string]any{"name": "Taken One"}).RequireError(t, http.StatusConflict, persist.CodeConflict)
	})

	t.Run("GuestChannelKeepsItsName", func(t *testing.T) {
		t.Parallel()
		e2 := newWSEnv(t)
		g := e2.join(t, persist.RoleGuest)
		e2.channelNames(t, g.Token)
		var list struct{ Channels []persist.Channel }
		e2.h.Get(t, e2.wsPath("/channels"), e2.owner.Token).Decode(t, &list)
		guestCh := list.Channels[0]
		other := persisttest.Channel(t, e2.h.Store, persist.ActorFor(e2.owner.User), e2.ws.ID, "private-talk")
		e2.patch(t, path(guestCh), e2.owner.Token, map[string]any{"name": "lobby"}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		e2.patch(t, path(other), e2.owner.Token, map[string]any{"name": "guest"}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		e2.patch(t, path(guestCh), e2.owner.Token, map[string]any{"name": "#Guest", "display_title": "Waiting room"}).RequireStatus(t, http.StatusOK)
	})

	t.Run("UnknownChannelIs404", func(t *testing.T) {
		t.Parallel()
		e.patch(t, "/api/channels/chn_nope", e.owner.Token, map[string]any{"name": "x"}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	})
}
