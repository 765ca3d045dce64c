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
		channel  persist.Channel
		changed  bool
		standing persist.Event
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (joined, error) {
		actor := callerOf(ctx).Actor()
		c, changed, err := tx.ChannelJoin(ctx, actor, chi.URLParam(r, "channel_id"))
		if err != nil {
			return joined{}, err
		}
		ev, err := tx.ChannelStandingEvent(ctx, actor, c.ID)
		return joined{c, changed, ev}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.publishStanding(r, res.standing)
	writeJSON(w, http.StatusOK, map[string]any{"channel": res.channel, "joined": res.changed})
}

// handleChannelLeave serves POST /api/channels/{channel_id}/leave: {channel}, plus the
// channel.member_removed event when the channel is private.
func (s *Server) handleChannelLeave(w http.ResponseWriter, r *http.Request) {
	type left struct {
		channel  persist.Channel
		event    *persist.Event
		standing persist.Event
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (left, error) {
		actor := callerOf(ctx).Actor()
		c, ev, err := tx.ChannelLeave(ctx, actor, chi.URLParam(r, "channel_id"))
		if err != nil {
			return left{}, err
		}
		standing, err := tx.ChannelStandingEvent(ctx, actor, c.ID)
		return left{c, ev, standing}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.publishStanding(r, res.standing)
	out := map[string]any{"channel": res.channel}
	if res.event != nil {
		out["event"] = res.event
	}
	writeJSON(w, http.StatusOK, out)
}

// handleChannelStarSet serves PUT /api/channels/{channel_id}/star and DELETE on the same path:
// {star: {channel_id, starred, starred_at}}.
func (s *Server) handleChannelStarSet(w http.ResponseWriter, r *http.Request) {
	type starred struct {
		star     persist.ChannelStar
		standing persist.Event
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (starred, error) {
		actor := callerOf(ctx).Actor()
		star, err := tx.ChannelStarSet(ctx, actor, chi.URLParam(r, "channel_id"), r.Method == http.MethodPut)
		if err != nil {
			return starred{}, err
		}
		ev, err := tx.ChannelStandingEvent(ctx, actor, star.ChannelID)
		return starred{star, ev}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.publishStanding(r, res.standing)
	writeJSON(w, http.StatusOK, map[string]any{"star": res.star})
}

// publishStanding tells the caller's other sockets that their standing in a channel changed
// (persist.ChannelStandingUpdated), after the change's commit. The change stands if the
// publish fails (the other tabs see it at their next reload): it is logged, not answered.
func (s *Server) publishStanding(r *http.Request, ev persist.Event) {
	if s.realtime == nil {
		return
	}
	if err := s.realtime.PublishSelf(ev); err != nil {
		s.logger.Warn("channel standing event not published", "correlation_id", correlationID(r.Context()),
			"channel_id", ev.ChannelID, "error", err)
	}
}
