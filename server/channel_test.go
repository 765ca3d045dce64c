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

func (e *wsEnv) createChannel(t *testing.T, token string, body any) *servertest.Response {
	t.Helper()
	return e.h.Post(t, e.wsPath("/channels"), token, body)
}

// channelOf decodes the "channel" of a response.
func channelOf(t *testing.T, r *servertest.Response) persist.Channel {
	t.Helper()
	var got struct{ Channel persist.Channel }
	r.Decode(t, &got)
	require.NotEmpty(t, got.Channel.ID, "%s", r.Body)
	return got.Channel
}

func TestChannelCreate(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t)
	member := e.join(t, persist.RoleMember)
	guest := e.join(t, persist.RoleGuest)
	outsider := e.h.NewUser(t)

	t.Run("EveryField", func(t *testing.T) {
		t.Parallel()
		r := e.createChannel(t, member.Token, map[string]any{"name": "#Product Launch!", "display_title": "  Product launch 🚀  ",
			"kind": "Announcement", "external_managed": true, "external_ref": " ticket:42 ", "external_url": "https://tracker.example/42",
			"sidebar_section": "  Projects "})
		r.RequireStatus(t, http.StatusCreated)
		c := channelOf(t, r)
		require.Equal(t, "product-launch", c.Name)
		require.Equal(t, "Product launch 🚀", c.DisplayTitle)
		require.Equal(t, "announcement", c.Kind)
		require.True(t, c.ExternalManaged)
		require.Equal(t, " ticket:42 ", c.ExternalRef, "external_ref is opaque")
		require.Equal(t, "https://tracker.example/42", c.ExternalURL)
		require.Equal(t, "Projects", c.SidebarSection)
		require.False(t, c.Archived)
		require.Nil(t, c.ArchivedAt)
		require.Equal(t, e.ws.ID, c.WorkspaceID)
		require.Regexp(t, `^C[A-Z0-9]{16}$`, c.RouteID)
		require.Equal(t, member.User.ID, c.CreatedBy)

		ev := e.logged(t, r)
		require.Equal(t, "channel.created", ev.Type)
		require.Equal(t, c.ID, ev.ChannelID)
		var payload struct{ Channel persist.Channel }
		require.NoError(t, json.Unmarshal(ev.Payload, &payload))
		require.Equal(t, c.Name, payload.Channel.Name)
	})

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		r := e.createChannel(t, e.owner.Token, map[string]any{"name": "plain"})
		r.RequireStatus(t, http.StatusCreated)
		raw := e.obj(t, r, "channel")
		require.Equal(t, "public", raw["kind"])
		require.Equal(t, false, raw["external_managed"])
		require.Equal(t, false, raw["archived"])
		for _, k := range []string{"display_title", "external_ref", "external_url", "sidebar_section", "archived_at"} {
			require.NotContains(t, raw, k, "empty nullable fields are omitted")
		}
	})

	t.Run("TitleIsTrimmedAndAtMost200Characters", func(t *testing.T) {
		t.Parallel()
		title200 := strings.Repeat("é", 200) // SPEC §Limits: display_title at most 200 Unicode characters
		r := e.createChannel(t, member.Token, map[string]any{"name": "long-title", "display_title": "   " + title200 + "\n"})
		r.RequireStatus(t, http.StatusCreated)
		require.Equal(t, title200, channelOf(t, r).DisplayTitle)
		e.createChannel(t, member.Token, map[string]any{"name": "too-long", "display_title": title200 + "é"}).
			RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	})

	t.Run("InvalidFieldsAre400", func(t *testing.T) {
		t.Parallel()
		for _, body := range []map[string]any{
			{"name": ""},
			{"name": "#!?"},
			{"name": "ok", "external_url": "javascript:alert(1)"},
			{"name": "ok", "external_url": "ftp://example.com/file"},
			{"name": "ok", "external_url": "/relative"},
			{"name": "ok", "kind": "not a kind"},
			{"name": "ok", "sidebar_section": strings.Repeat("s", persist.MaxSidebarSectionLength+1)},
			{"name": "ok", "external_ref": strings.Repeat("r", persist.MaxExternalRefLength+1)},
		} {
			e.createChannel(t, member.Token, body).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
	})

	t.Run("NameIsUniquePerWorkspace", func(t *testing.T) {
		t.Parallel()
		e.createChannel(t, member.Token, map[string]any{"name": "Dup Name"}).RequireStatus(t, http.StatusCreated)
		e.createChannel(t, e.owner.Token, map[string]any{"name": "dup-name"}).RequireError(t, http.StatusConflict, persist.CodeConflict)
		other := persisttest.Workspace(t, e.h.Store, outsider.User.ID)
		e.h.Post(t, "/api/workspaces/"+other.ID+"/channels", outsider.Token, map[string]any{"name": "dup-name"}).RequireStatus(t, http.StatusCreated)
	})

	t.Run("GuestsAndOutsidersCannot", func(t *testing.T) {
		t.Parallel()
		e.createChannel(t, guest.Token, map[string]any{"name": "guest-made"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.createChannel(t, outsider.Token, map[string]any{"name": "outsider-made"}).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
		e.h.Post(t, "/api/workspaces/wsp_nope/channels", member.Token, map[string]any{"name": "x"}).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	})

	t.Run("ParallelCreatesOfOneNameYieldOneChannel", func(t *testing.T) {
		t.Parallel()
		statuses := make([]int, 8)
		var wg sync.WaitGroup
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = e.createChannel(t, member.Token, map[string]any{"name": "racing"}).Status
			}()
		}
		wg.Wait()
		require.Equal(t, 1, countOf(statuses, http.StatusCreated))
		require.Equal(t, len(statuses)-1, countOf(statuses, http.StatusConflict))
	})
}

func countOf(xs []int, x int) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

func TestChannelList(t *testing.T) {
	t.Parallel()

	t.Run("OrderedByNameArchivedIncluded", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		owner := persist.ActorFor(e.owner.User)
		for _, name := range []string{"zeta", "alpha", "mid"} {
			persisttest.Channel(t, e.h.Store, owner, e.ws.ID, name)
		}
		alpha := e.h.Get(t, e.wsPath("/channels"), e.owner.Token).JSON(t)["channels"].([]any)[0].(map[string]any)
		e.patch(t, "/api/channels/"+alpha["id"].(string), e.owner.Token, map[string]any{"archived": true}).RequireStatus(t, http.StatusOK)
		member := e.join(t, persist.RoleMember)
		require.Equal(t, []string{"alpha", "mid", "zeta"}, e.channelNames(t, member.Token))
		var got struct{ Channels []persist.Channel }
		e.h.Get(t, e.wsPath("/channels"), member.Token).Decode(t, &got)
		require.True(t, got.Channels[0].Archived)
		require.NotNil(t, got.Channels[0].ArchivedAt)
	})

	t.Run("GuestSeesOnlyTheGuestChannelCreatedOnDemand", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")
		guest := e.join(t, persist.RoleGuest)
		require.Empty(t, e.eventsOf(t, "channel.created")[1:], "no guest channel before anyone needs it")
		require.Equal(t, []string{"guest"}, e.channelNames(t, guest.Token))
		require.Equal(t, []string{"guest"}, e.channelNames(t, guest.Token), "listing again finds the same one")
		created := e.eventsOf(t, "channel.created")
		require.Len(t, created, 2, "general, then guest, once")
		require.Equal(t, guest.User.ID, created[1].ActorID)
		require.Equal(t, []string{"general", "guest"}, e.channelNames(t, e.owner.Token))
	})

	t.Run("ParallelGuestsShareOneGuestChannel", func(t *testing.T) {
		t.Parallel()
		e := newWSEnv(t)
		guests := []servertest.Actor{e.join(t, persist.RoleGuest), e.join(t, persist.RoleGuest), e.join(t, persist.RoleGuest)}
		var wg sync.WaitGroup
		for _, g := range guests {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e.h.Get(t, e.wsPath("/channels"), g.Token).RequireStatus(t, http.StatusOK)
			}()
		}
		wg.Wait()
		require.Len(t, e.eventsOf(t, "channel.created"), 1)
		require.Equal(t, []string{"guest"}, e.channelNames(t, e.owner.Token))
	})
}
