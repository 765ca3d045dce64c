package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// handleChannelList serves GET /api/workspaces/{workspace_id}/channels: ordered by name,
// archived ones included, private ones only for their members; a guest sees the guest channel
// only.
func (s *Server) handleChannelList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	list, err := s.store.ChannelList(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeAppended(w, http.StatusOK, func(b []byte) []byte { return persist.AppendChannelsJSON(b, list) })
}

type channelCreateRequest struct {
	Name            string `json:"name"`
	DisplayTitle    string `json:"display_title"`
	Kind            string `json:"kind"`
	ExternalManaged bool   `json:"external_managed"`
	ExternalRef     string `json:"external_ref"`
	ExternalURL     string `json:"external_url"`
	SidebarSection  string `json:"sidebar_section"`
	Visibility      string `json:"visibility"`
}

// handleChannelCreate serves POST /api/workspaces/{workspace_id}/channels; "visibility":
// "private" makes a channel only its members read, its creator the first.
func (s *Server) handleChannelCreate(w http.ResponseWriter, r *http.Request) {
	var req channelCreateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (withEvent[persist.Channel], error) {
		c, ev, err := tx.ChannelCreate(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"), persist.ChannelCreateParams(req))
		return withEvent[persist.Channel]{c, ev}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"channel": res.value, "event": res.event})
}

type channelUpdateRequest struct {
	Name            *string `json:"name"`
	DisplayTitle    *string `json:"display_title"`
	Kind            *string `json:"kind"`
	Archived        *bool   `json:"archived"`
	ExternalManaged *bool   `json:"external_managed"`
	ExternalRef     *string `json:"external_ref"`
	ExternalURL     *string `json:"external_url"`
	SidebarSection  *string `json:"sidebar_section"`
	Visibility      *string `json:"visibility"`
}

// handleChannelUpdate serves PATCH /api/channels/{channel_id}: any subset of the fields; an
// empty string clears a nullable one.
func (s *Server) handleChannelUpdate(w http.ResponseWriter, r *http.Request) {
	var req channelUpdateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (withEvent[persist.Channel], error) {
		c, ev, err := tx.ChannelUpdate(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "channel_id"), persist.ChannelPatch(req))
		return withEvent[persist.Channel]{c, ev}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"channel": res.value, "event": res.event})
}
