package server

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// handleChannelMessageList serves GET /api/channels/{channel_id}/messages.
func (s *Server) handleChannelMessageList(w http.ResponseWriter, r *http.Request) {
	s.messageList(w, r, persist.Place{ChannelID: chi.URLParam(r, "channel_id")})
}

// handleDMMessageList serves GET /api/dms/{conversation_id}/messages.
func (s *Server) handleDMMessageList(w http.ResponseWriter, r *http.Request) {
	s.messageList(w, r, persist.Place{DMID: chi.URLParam(r, "conversation_id")})
}

func (s *Server) messageList(w http.ResponseWriter, r *http.Request, p persist.Place) {
	win, err := parseWindow(r.URL.Query(), clampLimit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	page, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.Page, error) {
		return tx.MessageList(ctx, callerOf(ctx).Actor(), p, win)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// overMax says what a page query does with a limit above persist.MaxPageLimit.
type overMax bool

const (
	// clampLimit reads it as the maximum, the rule of every list.
	clampLimit overMax = true
	// defaultLimit reads it as the default: thread pages, whose contract says out-of-range
	// limits fall back to 100.
	defaultLimit overMax = false
)

// parseWindow reads the page query shared by message lists and threads: limit (1-200; above
// 200 as over says; anything else means 100), latest=true (or mode=latest), and at most one of
// before_seq, after_seq and around_seq, each a non-negative integer. Codes: invalid_request.
func parseWindow(q url.Values, over overMax) (persist.Window, error) {
	win := persist.Window{Mode: persist.WindowEarliest, Limit: persist.DefaultPageLimit}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n >= 1 {
		switch {
		case n <= persist.MaxPageLimit:
			win.Limit = n
		case over == clampLimit:
			win.Limit = persist.MaxPageLimit
		}
	}
	latest := false
	if v := q.Get("latest"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return win, persist.Invalid("latest must be true or false")
		}
		latest = b
	}
	switch q.Get("mode") {
	case "":
	case "latest":
		latest = true
	default:
		return win, persist.Invalid("mode must be latest")
	}
	cursors := 0
	for _, c := range []struct {
		name string
		mode persist.WindowMode
	}{{"before_seq", persist.WindowBefore}, {"after_seq", persist.WindowAfter}, {"around_seq", persist.WindowAround}} {
		if !q.Has(c.name) {
			continue
		}
		n, err := strconv.ParseInt(q.Get(c.name), 10, 64)
		if err != nil || n < 0 {
			return win, persist.Invalid("%s must be a non-negative integer", c.name)
		}
		cursors++
		win.Mode, win.Seq = c.mode, n
	}
	if cursors > 1 {
		return win, persist.Invalid("give at most one of before_seq, after_seq and around_seq")
	}
	if latest && cursors > 0 {
		return win, persist.Invalid("latest=true cannot be combined with a cursor")
	}
	if latest {
		win.Mode = persist.WindowLatest
	}
	return win, nil
}

type messageCreateRequest struct {
	Body            string `json:"body"`
	QuotedMessageID string `json:"quoted_message_id"`
	Nonce           string `json:"nonce"`
	UploadID        string `json:"upload_id"`
	Kind            string `json:"kind"`
}

// handleChannelMessageCreate serves POST /api/channels/{channel_id}/messages.
func (s *Server) handleChannelMessageCreate(w http.ResponseWriter, r *http.Request) {
	s.messageCreate(w, r, persist.Place{ChannelID: chi.URLParam(r, "channel_id")})
}

// handleDMMessageCreate serves POST /api/dms/{conversation_id}/messages.
func (s *Server) handleDMMessageCreate(w http.ResponseWriter, r *http.Request) {
	s.messageCreate(w, r, persist.Place{DMID: chi.URLParam(r, "conversation_id")})
}

// messageCreate answers 201 {message, event}, or 200 {message} for a nonce replay.
func (s *Server) messageCreate(w http.ResponseWriter, r *http.Request, p persist.Place) {
	var req messageCreateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	res, err := persist.BatchMessageCreate(ctx, s.store, callerOf(ctx).Actor(), p, persist.MessageCreateParams{Body: req.Body,
		QuotedMessageID: req.QuotedMessageID, Nonce: req.Nonce, UploadID: req.UploadID, Kind: req.Kind})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if res.Replayed {
		writeJSON(w, http.StatusOK, map[string]any{"message": res.Message})
		return
	}
	writeJSON(w, http.StatusCreated, messageAndEvent(res.Message, res.Event))
}

// handleMessageGet serves GET /api/messages/{message_id}.
func (s *Server) handleMessageGet(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	m, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.Message, error) {
		return tx.MessageGet(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "message_id"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": m})
}

// messageNonceHeaders go on every answer of the nonce look-up, a miss and a refusal included:
// they say the look-up is supported, under both names clients probe (the route sets them).
var messageNonceHeaders = []string{"X-Natter-Message-Nonce", "supported", "X-ClickClack-Message-Nonce", "supported"}

// handleMessageByNonce serves GET /api/messages/by-nonce.
func (s *Server) handleMessageByNonce(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	m, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.Message, error) {
		return tx.MessageGetByNonce(ctx, callerOf(ctx).Actor(), q.Get("workspace_id"), q.Get("nonce"))
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": m})
}

// handleMessageUpdate serves PATCH /api/messages/{message_id}: {message, event}, or {message}
// when the body is unchanged.
func (s *Server) handleMessageUpdate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Body string `json:"body"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.MessageChanged, error) {
		return tx.MessageUpdate(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "message_id"), req.Body)
	})
	s.writeMessageChanged(w, r, res, err)
}

// handleMessageDelete serves DELETE /api/messages/{message_id}: the tombstone and its event
// (none when it was already deleted).
func (s *Server) handleMessageDelete(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.MessageChanged, error) {
		return tx.MessageDelete(ctx, callerOf(ctx).Actor(), chi.URLParam(r, "message_id"))
	})
	s.writeMessageChanged(w, r, res, err)
}

// writeMessageChanged answers an edit or delete with {message, event, events}: event is the
// message's own event, events every event appended (a delete may also unpin and update a
// thread); both are left out when nothing changed.
func (s *Server) writeMessageChanged(w http.ResponseWriter, r *http.Request, res persist.MessageChanged, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body := map[string]any{"message": res.Message}
	if len(res.Events) > 0 {
		body["event"], body["events"] = res.Events[0], res.Events
	}
	writeJSON(w, http.StatusOK, body)
}
