package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// memberListParams reads the directory's query: limit, cursor, q and role. Codes:
// invalid_request (a limit that is not a positive integer).
func memberListParams(r *http.Request) (persist.MemberListParams, error) {
	q := r.URL.Query()
	p := persist.MemberListParams{Cursor: q.Get("cursor"), Query: q.Get("q"), Role: q.Get("role")}
	if raw := q.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			return p, persist.Invalid("limit must be an integer between 1 and %d", persist.MemberPageMax)
		}
		p.Limit = n
	}
	return p, nil
}

// handleMemberList serves GET /api/workspaces/{workspace_id}/members: the member directory.
func (s *Server) handleMemberList(w http.ResponseWriter, r *http.Request) {
	p, err := memberListParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	// In a transaction, though it only reads: on the pool (persist.ReadV) the directory by name
	// measured slower, 13.7 against 10.7-11.6 ms (docs/performance.md, "Lighter listings").
	page, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.MemberPage[persist.DirectoryMember], error) {
		return tx.MemberList(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"), p)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeAppended(w, http.StatusOK, func(b []byte) []byte { return persist.AppendDirectoryJSON(b, &page) })
}

// handleMemberGet serves GET /api/workspaces/{workspace_id}/members/{user_id}: one directory
// entry, as a profile card shows it.
func (s *Server) handleMemberGet(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	m, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.DirectoryMember, error) {
		return tx.MemberDirectoryGet(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"), chi.URLParam(r, "user_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"member": m})
}

// handlePresence serves GET /api/workspaces/{workspace_id}/presence: who is online now, on any
// replica (docs/realtime.md, "Presence").
func (s *Server) handlePresence(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	online, err := persist.ReadV(ctx, s.store, func(tx *persist.Reader) ([]persist.OnlineMember, error) {
		return tx.PresenceOnline(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"presence": online})
}

// handleModerationList serves GET /api/workspaces/{workspace_id}/moderation/members: members
// with moderation state, for the owner and moderators; the directory's query applies.
func (s *Server) handleModerationList(w http.ResponseWriter, r *http.Request) {
	p, err := memberListParams(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	page, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.MemberPage[persist.ModeratedMember], error) {
		return tx.MemberModerationList(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"), p)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// handleMemberStanding serves GET /api/workspaces/{workspace_id}/membership: the caller's own
// role, timeout, block and guest budget.
func (s *Server) handleMemberStanding(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	m, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.ModeratedMember, error) {
		return tx.MemberStanding(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"member": m})
}

type moderationRequest struct {
	Role           *string    `json:"role"`
	TimeoutMinutes *int       `json:"timeout_minutes"`
	TimeoutUntil   *time.Time `json:"timeout_until"`
	ClearTimeout   bool       `json:"clear_timeout"`
	Blocked        *bool      `json:"blocked"`
	ModerationNote *string    `json:"moderation_note"`
}

// handleModerationUpdate serves PATCH /api/workspaces/{workspace_id}/moderation/members/{user_id}.
func (s *Server) handleModerationUpdate(w http.ResponseWriter, r *http.Request) {
	var req moderationRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (withEvent[persist.ModeratedMember], error) {
		m, ev, err := tx.MemberModerate(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"), chi.URLParam(r, "user_id"),
			persist.ModerationPatch{Role: req.Role, TimeoutMinutes: req.TimeoutMinutes, TimeoutUntil: req.TimeoutUntil,
				ClearTimeout: req.ClearTimeout, Blocked: req.Blocked, ModerationNote: req.ModerationNote})
		return withEvent[persist.ModeratedMember]{m, ev}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"member": res.value, "event": res.event})
}

// handleMemberRemove serves DELETE /api/workspaces/{workspace_id}/members/{user_id}:
// {member, event} once the person (and their user bots) left the workspace.
func (s *Server) handleMemberRemove(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	type result struct {
		removed persist.MemberRemoved
		event   persist.Event
	}
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (result, error) {
		removed, ev, err := tx.MemberRemove(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"), chi.URLParam(r, "user_id"))
		return result{removed, ev}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"member": res.removed, "event": res.event})
}
