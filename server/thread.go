package server

import (
	"net/http"

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
