package server

import (
	"fmt"
	"mime"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/archive"
)

// handleWorkspaceExport serves GET /api/workspaces/{workspace_id}/export: the owner's download
// of the workspace, streamed as the archive is read. archive.Export checks ownership before the
// first byte, so a refusal is an ordinary error answer; a failure after the first byte aborts the
// connection, leaving the client a truncated zip no reader accepts rather than one that looks
// whole.
func (s *Server) handleWorkspaceExport(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	actor := callerOf(ctx).Actor()
	started := false
	_, err := archive.Export(ctx, archive.Options{Store: s.store, Blobs: s.blobs, Actor: &actor,
		Scope: persist.ArchiveScope{WorkspaceID: chi.URLParam(r, "workspace_id"), ViewerID: actor.UserID},
		Started: func(ws persist.Workspace) {
			started = true
			name := fmt.Sprintf("natter-%s-%s.zip", ws.Slug, s.store.Now().UTC().Format("20060102-150405"))
			h := w.Header()
			h.Set("Content-Type", "application/zip")
			h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
			h.Set("Cache-Control", "no-store")
			h.Set("X-Content-Type-Options", "nosniff")
		}}, w)
	if err == nil {
		return
	}
	if !started {
		s.writeError(w, r, err)
		return
	}
	if ctx.Err() == nil { // a client that went away is no failure of ours
		s.logger.Error("workspace export failed", "correlation_id", correlationID(ctx), "error", err)
	}
	panic(http.ErrAbortHandler)
}
