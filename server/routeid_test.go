package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestRouteResolve(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t)
	member := e.join(t, persist.RoleMember)
	guest := e.join(t, persist.RoleGuest)
	outsider := e.h.NewUser(t)
	general := persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, "general")
	guestRoom := persisttest.Channel(t, e.h.Store, persist.ActorFor(e.owner.User), e.ws.ID, persist.GuestChannel)
	dmID := persisttest.DM(t, e.h.Store, e.ws.ID, e.owner.User.ID, member.User.ID)
	other := persisttest.Workspace(t, e.h.Store, outsider.User.ID)
	otherChannel := persisttest.Channel(t, e.h.Store, persist.ActorFor(outsider.User), other.ID, "general")
	persisttest.Member(t, e.h.Store, other.ID, member.User.ID, persist.RoleMember)
	resolve := func(token, ws, target string) map[string]any {
		r := e.h.Get(t, "/api/routes/"+ws+"/"+target, token)
		r.RequireStatus(t, http.StatusOK)
		return e.obj(t, r, "route")
	}
	refused := func(token, ws, target string) {
		e.h.Get(t, "/api/routes/"+ws+"/"+target, token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	}

	t.Run("ChannelByPublicOrInternalIds", func(t *testing.T) {
		t.Parallel()
		want := map[string]any{"workspace_id": e.ws.ID, "workspace_route_id": e.ws.RouteID, "target_type": "channel",
			"target_id": general.ID, "target_route_id": general.RouteID, "channel_id": general.ID,
			"canonical_path": "/" + e.ws.RouteID + "/" + general.RouteID}
		for _, pair := range [][2]string{{e.ws.RouteID, general.RouteID}, {e.ws.ID, general.ID}, {e.ws.RouteID, general.ID}, {e.ws.ID, general.RouteID}} {
			require.Equal(t, want, resolve(member.Token, pair[0], pair[1]), "%v", pair)
		}
	})

	t.Run("DirectConversationForItsMembers", func(t *testing.T) {
		t.Parallel()
		routeID := persist.RouteID("D", dmID) // as the conversation stores it
		got := resolve(member.Token, e.ws.RouteID, routeID)
		require.Equal(t, routeID, got["target_route_id"])
		require.Equal(t, "direct", got["target_type"])
		require.Equal(t, dmID, got["direct_conversation_id"])
		require.Equal(t, dmID, got["target_id"])
		require.NotContains(t, got, "channel_id")
		require.Equal(t, got, resolve(e.owner.Token, e.ws.ID, dmID))
		refused(e.join(t, persist.RoleModerator).Token, e.ws.RouteID, routeID)
	})

	t.Run("GuestsResolveOnlyTheGuestChannel", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, guestRoom.ID, resolve(guest.Token, e.ws.RouteID, guestRoom.RouteID)["channel_id"])
		refused(guest.Token, e.ws.RouteID, general.RouteID)
	})

	t.Run("OtherWorkspacesAndMismatchesAre404", func(t *testing.T) {
		t.Parallel()
		refused(outsider.Token, e.ws.RouteID, general.RouteID)
		refused(member.Token, e.ws.RouteID, otherChannel.RouteID) // a real channel, but of another workspace
		refused(member.Token, other.RouteID, general.RouteID)
		require.Equal(t, otherChannel.ID, resolve(member.Token, other.RouteID, otherChannel.RouteID)["channel_id"])
	})

	t.Run("UnknownIdsAre404", func(t *testing.T) {
		t.Parallel()
		for _, pair := range [][2]string{
			{"TAAAAAAAAAAAAAAAA", general.RouteID},
			{"wsp_nope", general.ID},
			{e.ws.RouteID, "CAAAAAAAAAAAAAAAA"},
			{e.ws.RouteID, "chn_nope"},
			{e.ws.RouteID, "DAAAAAAAAAAAAAAAA"},
			{e.ws.RouteID, "MAAAAAAAAAAAAAAAA"},
			{e.ws.RouteID, "msg_nope"},
			{e.ws.RouteID, "XAAAAAAAAAAAAAAAA"},
			{e.ws.RouteID, e.ws.RouteID},
		} {
			refused(member.Token, pair[0], pair[1])
		}
	})
}
