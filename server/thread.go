package server

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// handleThreadGet serves GET /api/messages/{message_id}/thread:
// {root, replies, thread_state, oldest_seq, newest_seq, has_older, has_newer}.
func (s *Server) handleThreadGet(w http.ResponseWriter, r *http.Request) {
	win, err := parseWindow(r.URL.Query(), defaultLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	t, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.Thread, error) {
		return tx.ThreadGet(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "message_id"), win)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"root": t.Root, "replies": t.Replies.Messages,
		"thread_state": t.ThreadState, "oldest_seq": t.Replies.OldestSeq, "newest_seq": t.Replies.NewestSeq,
		"has_older": t.Replies.HasOlder, "has_newer": t.Replies.HasNewer})
}

// handleThreadReplyCreate serves POST /api/messages/{message_id}/thread/replies: 201
// {message, thread_state, events}, or 200 {message, thread_state} for a nonce replay.
func (s *Server) handleThreadReplyCreate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Body            string `json:"body"`
		QuotedMessageID string `json:"quoted_message_id"`
		Nonce           string `json:"nonce"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	res, err := persist.BatchOnMessage(ctx, s.store, chi.URLParam(r, "message_id"), func(tx *persist.Tx) (persist.ReplyCreated, error) {
		return tx.ThreadReplyCreate(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "message_id"),
			persist.MessageCreateParams{Body: req.Body, QuotedMessageID: req.QuotedMessageID, Nonce: req.Nonce})
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if res.Replayed {
		writeJSON(w, http.StatusOK, map[string]any{"message": res.Message, "thread_state": res.ThreadState})
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"message": res.Message, "thread_state": res.ThreadState,
		"events": res.Events})
}

// handleThreadList serves GET /api/workspaces/{workspace_id}/threads: the caller's threads,
// newest activity first, {threads, next_cursor, unread_threads}.
func (s *Server) handleThreadList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := persist.ThreadListParams{WorkspaceID: chi.URLParam(r, "workspace_id"), Cursor: q.Get("cursor")}
	if raw := q.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			s.writeError(w, r, persist.Invalid("limit must be an integer between 1 and %d", persist.MaxThreadListLimit))
			return
		}
		p.Limit = n
	}
	ctx := r.Context()
	page, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.ThreadListPage, error) {
		return tx.ThreadList(ctx, callerOf(ctx).Actor(), p)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// handleThreadRead serves POST /api/messages/{message_id}/thread/read {seq}: {receipt}, the
// caller's read position in the thread after moving it forward to reply seq.
func (s *Server) handleThreadRead(w http.ResponseWriter, r *http.Request) {
	root := chi.URLParam(r, "message_id")
	s.markRead(w, r, func(tx *persist.Tx, actor persist.Actor, seq int64) (persist.Receipt, error) {
		return tx.ThreadReadMark(r.Context(), actor, root, seq)
	})
}
