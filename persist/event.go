package persist

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Event is one row of a workspace's ordered log. Cursor is dense per workspace, starting at 1.
type Event struct {
	ID                   string
	WorkspaceID          string
	Cursor               int64
	Type                 string
	ChannelID            string
	DirectConversationID string
	MessageID            string
	Seq                  *int64
	ActorID              string
	CreatedAt            time.Time
	Payload              json.RawMessage
}

// MarshalJSON renders the envelope of CONTRACT.md §Events, the cursor as an opaque string.
func (e Event) MarshalJSON() ([]byte, error) {
	type wire struct {
		ID                   string          `json:"id"`
		Cursor               string          `json:"cursor"`
		Type                 string          `json:"type"`
		WorkspaceID          string          `json:"workspace_id"`
		ChannelID            string          `json:"channel_id,omitempty"`
		DirectConversationID string          `json:"direct_conversation_id,omitempty"`
		MessageID            string          `json:"message_id,omitempty"`
		Seq                  *int64          `json:"seq,omitempty"`
		ActorID              string          `json:"actor_id,omitempty"`
		CreatedAt            time.Time       `json:"created_at"`
		Payload              json.RawMessage `json:"payload"`
	}
	cursor := ""
	if e.Cursor > 0 {
		cursor = FormatCursor(e.Cursor)
	}
	payload := e.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("{}")
	}
	return json.Marshal(wire{ID: e.ID, Cursor: cursor, Type: e.Type, WorkspaceID: e.WorkspaceID,
		ChannelID: e.ChannelID, DirectConversationID: e.DirectConversationID, MessageID: e.MessageID,
		Seq: e.Seq, ActorID: e.ActorID, CreatedAt: e.CreatedAt, Payload: payload})
}

// FormatCursor renders a cursor for clients.
func FormatCursor(c int64) string { return strconv.FormatInt(c, 10) }

// ParseCursor reads a client cursor; "" is the start of the log (0). Codes: resync_required.
func ParseCursor(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	c, err := strconv.ParseInt(s, 10, 64)
	if err != nil || c < 0 {
		return 0, Errorf(CodeResyncRequired, "the cursor is not one this server issued; resync through the message endpoints")
	}
	return c, nil
}

// EventInput is what a mutation says about itself.
type EventInput struct {
	WorkspaceID          string
	Type                 string
	ChannelID            string
	DirectConversationID string
	MessageID            string
	Seq                  *int64
	ActorID              string
	Payload              any
}

// EventAppend writes the mutation's event as the last write of its transaction: it takes the
// next cursor from the workspace's counter row, whose lock is held until commit, so cursor order
// is commit order and the sequence has no gaps. The store wakes the relay after commit.
func (tx *Tx) EventAppend(ctx context.Context, in EventInput) (Event, error) {
	payload, err := json.Marshal(in.Payload)
	if err != nil {
		return Event{}, fmt.Errorf("encode %s payload: %w", in.Type, err)
	}
	ev := Event{ID: NewID(PrefixEvent, tx.now), WorkspaceID: in.WorkspaceID, Type: in.Type,
		ChannelID: in.ChannelID, DirectConversationID: in.DirectConversationID, MessageID: in.MessageID,
		Seq: in.Seq, ActorID: in.ActorID, CreatedAt: tx.now, Payload: payload}
	if err := tx.queryRow(ctx, `UPDATE event_heads SET last_cursor = last_cursor + 1
		WHERE workspace_id = $1 RETURNING last_cursor`, in.WorkspaceID).Scan(&ev.Cursor); err != nil {
		return Event{}, notFoundAs(err, "workspace")
	}
	if _, err := tx.exec(ctx, `INSERT INTO events (workspace_id, cursor, id, type, channel_id,
			direct_conversation_id, message_id, seq, actor_id, created_at, payload)
		VALUES ($1, $2, $3, $4, nullif($5, ''), nullif($6, ''), nullif($7, ''), $8, nullif($9, ''), $10, $11)`,
		ev.WorkspaceID, ev.Cursor, ev.ID, ev.Type, ev.ChannelID, ev.DirectConversationID, ev.MessageID,
		ev.Seq, ev.ActorID, ev.CreatedAt, payload); err != nil {
		return Event{}, err
	}
	tx.touched = append(tx.touched, in.WorkspaceID)
	return ev, nil
}

const eventColumns = `id, workspace_id, cursor, type, coalesce(channel_id, ''), coalesce(direct_conversation_id, ''),
	coalesce(message_id, ''), seq, coalesce(actor_id, ''), created_at, payload`

func eventDest(e *Event) []any {
	return []any{&e.ID, &e.WorkspaceID, &e.Cursor, &e.Type, &e.ChannelID, &e.DirectConversationID,
		&e.MessageID, &e.Seq, &e.ActorID, &e.CreatedAt, &e.Payload}
}

// EventListAfter returns up to limit events of a workspace with cursor > after, in cursor order.
// Visibility filtering is the caller's (see the realtime issue); this is the raw log.
func (tx *Tx) EventListAfter(ctx context.Context, workspaceID string, after int64, limit int) ([]Event, error) {
	rows, err := tx.query(ctx, `SELECT `+eventColumns+` FROM events
		WHERE workspace_id = $1 AND cursor > $2 ORDER BY cursor LIMIT $3`, workspaceID, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		if err := rows.Scan(eventDest(&e)...); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
