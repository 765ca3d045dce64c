package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

type inviteCreateRequest struct {
	Role           string `json:"role"`
	ExpiresInHours int    `json:"expires_in_hours"`
	// Emails, when given, mints one invite per address and emails each its link.
	Emails []string `json:"emails"`
}

// handleInviteCreate serves POST /api/workspaces/{workspace_id}/invites: the raw token is in
// this answer only.
func (s *Server) handleInviteCreate(w http.ResponseWriter, r *http.Request) {
	var req inviteCreateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Emails != nil {
		s.mailInvites(w, r, req)
		return
	}
	ctx := r.Context()
	inv, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.Invite, error) {
		return tx.InviteCreate(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"), req.Role, req.ExpiresInHours)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"invite": inv})
}

type inviteAcceptRequest struct {
	Token string `json:"token"`
}

// handleInviteAccept serves POST /api/invites/accept: the caller joins the invite's workspace.
func (s *Server) handleInviteAccept(w http.ResponseWriter, r *http.Request) {
	var req inviteAcceptRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	type joined struct {
		workspace persist.Workspace
		member    persist.MemberEntry
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (joined, error) {
		ws, m, err := tx.InviteAccept(ctx, callerOf(ctx).Actor(), req.Token)
		return joined{ws, m}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"workspace": res.workspace, "member": res.member.Directory()})
}

// handleInviteList serves GET /api/workspaces/{workspace_id}/invites: the open invites, without
// their tokens.
func (s *Server) handleInviteList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	list, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) ([]persist.Invite, error) {
		return tx.InviteList(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"invites": list})
}

// handleInviteRevoke serves DELETE /api/workspaces/{workspace_id}/invites/{invite_id}: the
// invite, now expired.
func (s *Server) handleInviteRevoke(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	inv, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.Invite, error) {
		return tx.InviteRevoke(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"), chi.URLParam(r, "invite_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"invite": inv})
}
