package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// handleChannelMemberList serves GET /api/channels/{channel_id}/members: a channel's members,
// paged like the member directory (a private channel's for its members only).
func (s *Server) handleChannelMemberList(w http.ResponseWriter, r *http.Request) {
	p, err := memberListParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	page, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.MemberPage[persist.DirectoryMember], error) {
		return tx.ChannelMemberList(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "channel_id"), p)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

type channelMemberAddRequest struct {
	UserID string `json:"user_id"`
}

type channelMemberAdded struct {
	change  persist.ChannelMemberChange
	event   persist.Event
	created bool
}

// handleChannelMemberAdd serves POST /api/channels/{channel_id}/members {user_id}: 201 {member,
// channel, event} with channel.member_added (a public channel: 201 {member, channel}, someone
// who had left it is back), or 200 {member, channel} when they were in already.
func (s *Server) handleChannelMemberAdd(w http.ResponseWriter, r *http.Request) {
	var req channelMemberAddRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.UserID == "" {
		s.writeError(w, r, persist.Invalid("user_id is required"))
		return
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (channelMemberAdded, error) {
		ch, ev, created, err := tx.ChannelMemberAdd(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "channel_id"), req.UserID)
		return channelMemberAdded{ch, ev, created}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !res.created {
		writeJSON(w, http.StatusOK, map[string]any{"member": res.change.Member, "channel": res.change.Channel})
		return
	}
	if res.event.ID == "" { // someone brought back into a public channel: no event
		writeJSON(w, http.StatusCreated, map[string]any{"member": res.change.Member, "channel": res.change.Channel})
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"member": res.change.Member, "channel": res.change.Channel, "event": res.event})
}

// handleChannelMemberRemove serves DELETE /api/channels/{channel_id}/members/{user_id}: leaving,
// or an owner or moderator removing someone; {member, channel, event} with
// channel.member_removed.
func (s *Server) handleChannelMemberRemove(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (withEvent[persist.ChannelMemberChange], error) {
		ch, ev, err := tx.ChannelMemberRemove(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "channel_id"), chi.URLParam(r, "user_id"))
		return withEvent[persist.ChannelMemberChange]{ch, ev}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"member": res.value.Member, "channel": res.value.Channel, "event": res.event})
}

// handleModerationChannelList serves GET /api/workspaces/{workspace_id}/moderation/channels: the
// workspace's private channels (name, member count, archived), for its owner and moderators, who
// may archive one (PATCH /api/channels/{id} {archived}) without being able to read it.
func (s *Server) handleModerationChannelList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	list, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) ([]persist.PrivateChannelSummary, error) {
		return tx.ModerationChannelList(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"channels": list})
}
