package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// handleWorkspaceList serves GET /api/workspaces: the caller's workspaces, each with the
// caller's role.
func (s *Server) handleWorkspaceList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	list, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) ([]persist.Workspace, error) {
		return tx.WorkspaceList(ctx, callerOf(ctx).Actor())
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"workspaces": list})
}

type workspaceCreateRequest struct {
	Name string `json:"name"`
	Slug string `json:"slug"`
}

// handleWorkspaceCreate serves POST /api/workspaces: the caller becomes the owner.
func (s *Server) handleWorkspaceCreate(w http.ResponseWriter, r *http.Request) {
	var req workspaceCreateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	ws, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.Workspace, error) {
		return tx.WorkspaceCreate(ctx, callerOf(ctx).User.ID, req.Name, req.Slug)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"workspace": ws})
}

// handleWorkspaceGet serves GET /api/workspaces/{workspace_id}.
func (s *Server) handleWorkspaceGet(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ws, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.Workspace, error) {
		return tx.WorkspaceRead(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"workspace": ws})
}

type workspaceUpdateRequest struct {
	Name    *string `json:"name"`
	Slug    *string `json:"slug"`
	IconURL *string `json:"icon_url"`
}

// handleWorkspaceUpdate serves PATCH /api/workspaces/{workspace_id}: omitted fields stay
// unchanged; an empty icon_url clears the icon.
func (s *Server) handleWorkspaceUpdate(w http.ResponseWriter, r *http.Request) {
	var req workspaceUpdateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (withEvent[persist.Workspace], error) {
		ws, ev, err := tx.WorkspaceUpdate(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"),
			persist.WorkspacePatch{Name: req.Name, Slug: req.Slug, IconURL: req.IconURL})
		return withEvent[persist.Workspace]{ws, ev}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"workspace": res.value, "event": res.event})
}

// handleWorkspaceDelete serves DELETE /api/workspaces/{workspace_id}: permanent, owner only.
// The upload objects the deletion queued are deleted after commit, before the answer.
func (s *Server) handleWorkspaceDelete(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	err := s.store.WithTx(ctx, func(tx *persist.Tx) error {
		return tx.WorkspaceDelete(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.deleteQueuedUploads(ctx)
	writeNoContent(w)
}

type transferOwnershipRequest struct {
	UserID string `json:"user_id"`
}

// handleWorkspaceTransferOwnership serves POST /api/workspaces/{workspace_id}/transfer-ownership.
func (s *Server) handleWorkspaceTransferOwnership(w http.ResponseWriter, r *http.Request) {
	var req transferOwnershipRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (withEvent[persist.Workspace], error) {
		ws, ev, err := tx.WorkspaceTransferOwnership(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "workspace_id"), req.UserID)
		return withEvent[persist.Workspace]{ws, ev}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"workspace": res.value, "event": res.event})
}

// withEvent carries a mutation's result and its event out of a transaction.
type withEvent[T any] struct {
	value T
	event persist.Event
}
