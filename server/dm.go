package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// handleDMList serves GET /api/dms?workspace_id=: {conversations}, newest activity first.
func (s *Server) handleDMList(w http.ResponseWriter, r *http.Request) {
	ws := r.URL.Query().Get("workspace_id")
	if ws == "" {
		s.writeError(w, r, persist.Invalid("workspace_id is required"))
		return
	}
	ctx := r.Context()
	// Outside a transaction (persist.ReadV): the list and its two hydrations are one statement
	// each on the pool, with no BEGIN and no COMMIT to wait for.
	dms, err := persist.ReadV(ctx, s.store, func(tx *persist.Reader) ([]persist.DM, error) {
		return tx.DMList(ctx, callerOf(ctx).Actor(), ws)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"conversations": dms})
}

type dmCreated struct {
	dm      persist.DM
	created bool
}

// handleDMCreate serves POST /api/dms: 201 {conversation}, or 200 with the existing one for the
// same member set.
func (s *Server) handleDMCreate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		WorkspaceID string   `json:"workspace_id"`
		MemberIDs   []string `json:"member_ids"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.WorkspaceID == "" {
		s.writeError(w, r, persist.Invalid("workspace_id is required"))
		return
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (dmCreated, error) {
		d, created, err := tx.DMCreate(ctx, callerOf(ctx).Actor(), req.WorkspaceID, req.MemberIDs)
		return dmCreated{d, created}, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if res.created {
		status = http.StatusCreated
	}
	writeJSON(w, status, map[string]any{"conversation": res.dm})
}

// handleDMGet serves GET /api/dms/{conversation_id}.
func (s *Server) handleDMGet(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	d, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.DM, error) {
		return tx.DMGet(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "conversation_id"))
	})
	s.writeDM(w, r, d, err)
}

// handleDMHide serves DELETE /api/dms/{conversation_id}: hides it for the caller only.
func (s *Server) handleDMHide(w http.ResponseWriter, r *http.Request) { s.dmSetHidden(w, r, true) }

// handleDMOpen serves POST /api/dms/{conversation_id}/open: shows a hidden one again.
func (s *Server) handleDMOpen(w http.ResponseWriter, r *http.Request) { s.dmSetHidden(w, r, false) }

func (s *Server) dmSetHidden(w http.ResponseWriter, r *http.Request, hidden bool) {
	ctx := r.Context()
	d, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.DM, error) {
		return tx.DMSetHidden(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "conversation_id"), hidden)
	})
	s.writeDM(w, r, d, err)
}

func (s *Server) writeDM(w http.ResponseWriter, r *http.Request, d persist.DM, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"conversation": d})
}
