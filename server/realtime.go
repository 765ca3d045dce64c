package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/realtime"
)

// realtimeWorkspace is the workspace a realtime request's query names; a bot token implies its
// own. Codes: invalid_request.
func realtimeWorkspace(q url.Values, c *Caller) (string, error) {
	if id := q.Get("workspace_id"); id != "" {
		return id, nil
	}
	if id := c.Actor().TokenWorkspaceID; id != "" {
		return id, nil
	}
	return "", persist.Invalid("workspace_id is required")
}

// errRealtimeOff answers realtime requests on a server built without the realtime hub.
var errRealtimeOff = persist.Errorf(persist.CodeUnavailable, "realtime delivery is not running on this server")

type eventPageView struct {
	Events     []persist.Event `json:"events"`
	NextCursor string          `json:"next_cursor"`
	HasMore    bool            `json:"has_more"`
	TailCursor *string         `json:"tail_cursor,omitempty"`
}

func cursorString(c int64) string {
	if c == 0 {
		return ""
	}
	return persist.FormatCursor(c)
}

// handleRealtimeEvents serves GET /api/realtime/events: backfill of the durable events after a
// cursor that the caller may see.
func (s *Server) handleRealtimeEvents(w http.ResponseWriter, r *http.Request) {
	caller := callerOf(r.Context())
	q := r.URL.Query()
	workspaceID, err := realtimeWorkspace(q, caller)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	after, err := persist.ParseCursor(q.Get("after_cursor"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	limit := 200
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 {
			s.writeError(w, r, persist.Invalid("limit must be a whole number from 1 to 500"))
			return
		}
		limit = min(limit, 500) // above the maximum is the maximum
	}
	withTail := false
	if v := q.Get("include_tail"); v != "" {
		if withTail, err = strconv.ParseBool(v); err != nil {
			s.writeError(w, r, persist.Invalid("include_tail must be true or false"))
			return
		}
	}
	ctx := r.Context()
	page, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.EventPage, error) {
		return tx.EventPageFor(ctx, caller.Actor(), workspaceID, after, limit, withTail)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	view := eventPageView{Events: page.Events, NextCursor: cursorString(page.Next), HasMore: page.HasMore}
	if withTail {
		tail := cursorString(page.Tail)
		view.TailCursor = &tail
	}
	writeJSON(w, http.StatusOK, view)
}

// handleRealtimeSocket serves GET /api/realtime/ws: after the origin check, the hub revalidates
// the workspace and membership, upgrades, backfills after the cursor and goes live.
func (s *Server) handleRealtimeSocket(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" && !s.allowedOrigin(r, origin) {
		s.writeError(w, r, persist.Forbidden("WebSocket connections from this origin are refused"))
		return
	}
	if s.realtime == nil {
		s.writeError(w, r, errRealtimeOff)
		return
	}
	if !isWebSocketUpgrade(r) {
		// Answered here, before anything hijacks the connection, so a plain HTTP client keeps
		// a usable keep-alive connection.
		w.Header().Set("Upgrade", "websocket")
		s.writeError(w, r, persist.Errorf(persist.CodeUpgradeRequired, "this endpoint speaks WebSocket: send a GET with Upgrade: websocket"))
		return
	}
	caller := callerOf(r.Context())
	q := r.URL.Query() // parsed once: handshakes come in storms
	workspaceID, err := realtimeWorkspace(q, caller)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	j := realtime.Join{Actor: caller.Actor(), WorkspaceID: workspaceID, AfterCursor: q.Get("after_cursor"),
		Presence: q.Get("presence") == "1" || q.Get("presence") == "true"}
	if caller.Session != nil && caller.Via != viaProxy { // a proxy assertion has no session to revalidate
		j.SessionID = caller.Session.ID
	}
	if caller.Token != nil {
		j.TokenID = caller.Token.ID
	}
	if err := s.realtime.Accept(w, r, j); err != nil {
		s.writeError(w, r, err)
	}
}

// isWebSocketUpgrade reports whether r asks to switch to WebSocket (RFC 6455 §4.1).
func isWebSocketUpgrade(r *http.Request) bool {
	return headerHasToken(r.Header, "Connection", "upgrade") && headerHasToken(r.Header, "Upgrade", "websocket")
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, part := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}

type ephemeralRequest struct {
	WorkspaceID          string          `json:"workspace_id"`
	ChannelID            string          `json:"channel_id"`
	DirectConversationID string          `json:"direct_conversation_id"`
	Type                 string          `json:"type"`
	Payload              json.RawMessage `json:"payload"`
}

// handleRealtimeEphemeral serves POST /api/realtime/ephemeral: an event for one channel or
// conversation, delivered live to sockets over core NATS and never stored.
func (s *Server) handleRealtimeEphemeral(w http.ResponseWriter, r *http.Request) {
	if s.realtime == nil {
		s.writeError(w, r, errRealtimeOff)
		return
	}
	var req ephemeralRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	ev, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.Event, error) {
		return tx.EphemeralAuthorize(ctx, callerOf(ctx).Actor(), persist.EphemeralInput{WorkspaceID: req.WorkspaceID,
			ChannelID: req.ChannelID, DirectConversationID: req.DirectConversationID, Type: req.Type, Payload: req.Payload})
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.realtime.PublishEphemeral(ev); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"event": ev})
}
