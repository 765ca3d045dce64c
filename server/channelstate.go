package server

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// handleChannelBrowse serves GET /api/workspaces/{workspace_id}/channels/browse?q=&limit=&cursor=:
// the channel browser, a page of live channels by name with the caller's standing and member
// counts.
func (s *Server) handleChannelBrowse(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := persist.ChannelBrowseParams{Query: q.Get("q"), Cursor: q.Get("cursor")}
	if raw := q.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			s.writeError(w, r, persist.Invalid("limit must be an integer between 1 and %d", persist.ChannelBrowseMax))
			return
		}
		p.Limit = n
	}
	ctx := r.Context()
	page, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.ChannelBrowsePage, error) {
		return tx.ChannelBrowse(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"), p)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// handleChannelJoin serves POST /api/channels/{channel_id}/join: {channel, joined}, joined false
// when the caller was in it already.
func (s *Server) handleChannelJoin(w http.ResponseWriter, r *http.Request) {
	type joined struct {
		channel persist.Channel
		changed bool
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (joined, error) {
		c, changed, err := tx.ChannelJoin(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "channel_id"))
		return joined{c, changed}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"channel": res.channel, "joined": res.changed})
}

// handleChannelLeave serves POST /api/channels/{channel_id}/leave: {channel}, plus the
// channel.member_removed event when the channel is private.
func (s *Server) handleChannelLeave(w http.ResponseWriter, r *http.Request) {
	type left struct {
		channel persist.Channel
		event   *persist.Event
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (left, error) {
		c, ev, err := tx.ChannelLeave(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "channel_id"))
		return left{c, ev}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := map[string]any{"channel": res.channel}
	if res.event != nil {
		out["event"] = res.event
	}
	writeJSON(w, http.StatusOK, out)
}

// handleChannelStarSet serves PUT /api/channels/{channel_id}/star and DELETE on the same path:
// {star: {channel_id, starred, starred_at}}.
func (s *Server) handleChannelStarSet(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	star, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.ChannelStar, error) {
		return tx.ChannelStarSet(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "channel_id"), r.Method == http.MethodPut)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"star": star})
}
