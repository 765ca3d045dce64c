package persist

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// MaxPins is how many messages a channel may have pinned at once.
const MaxPins = 100

// Pin is a message pinned to a channel: shared channel state. Message is set in listings and
// on a new pin.
type Pin struct {
	WorkspaceID string    `json:"workspace_id"`
	ChannelID   string    `json:"channel_id"`
	MessageID   string    `json:"message_id"`
	PinnedBy    string    `json:"pinned_by"`
	PinnedAt    time.Time `json:"pinned_at"`
	Message     *Message  `json:"message,omitempty"`
}

// PinAdd pins a message of a channel and appends pin.added; the pin comes back with its full
// message. The channel's pin counter row is locked to commit, so the limit holds under
// concurrency. Codes: not_found (channel, or a message not in it), forbidden (guards), conflict
// (already pinned, or MaxPins reached), message_deleted.
func (tx *Tx) PinAdd(ctx context.Context, actor Actor, channelID, messageID string) (Pin, Event, error) {
	c, _, err := tx.ChannelForChange(ctx, actor, channelID)
	if err != nil {
		return Pin{}, Event{}, err
	}
	// FOR SHARE: a concurrent delete of the message waits, then removes this pin.
	m, err := tx.messageLoad(ctx, messageID, "FOR SHARE OF m")
	if err == nil && (m.ChannelID != c.ID || m.WorkspaceID != c.WorkspaceID) {
		err = NotFound("message")
	}
	if err != nil {
		return Pin{}, Event{}, err
	}
	if m.DeletedAt != nil {
		return Pin{}, Event{}, Errorf(CodeMessageDeleted, "a deleted message cannot be pinned")
	}
	p := Pin{WorkspaceID: c.WorkspaceID, ChannelID: c.ID, MessageID: m.ID, PinnedBy: actor.UserID, PinnedAt: tx.now}
	tag, err := tx.exec(ctx, `INSERT INTO pins (channel_id, message_id, workspace_id, pinned_by, pinned_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, p.ChannelID, p.MessageID, p.WorkspaceID, p.PinnedBy, p.PinnedAt)
	if err != nil {
		return Pin{}, Event{}, err
	}
	if tag.RowsAffected() == 0 {
		return Pin{}, Event{}, Conflict("that message is already pinned")
	}
	var count int
	err = tx.queryRow(ctx, `INSERT INTO channel_pin_counts AS pc (channel_id, workspace_id, count) VALUES ($1, $2, 1)
		ON CONFLICT (channel_id) DO UPDATE SET count = pc.count + 1 WHERE pc.count < $3
		RETURNING count`, p.ChannelID, p.WorkspaceID, MaxPins).Scan(&count)
	if errors.Is(err, pgx.ErrNoRows) {
		return Pin{}, Event{}, Conflict("a channel holds at most %d pins; unpin one first", MaxPins)
	}
	if err != nil {
		return Pin{}, Event{}, err
	}
	if m, err = tx.messageHydrate(ctx, actor, m); err != nil {
		return Pin{}, Event{}, err
	}
	p.Message = &m
	ev, err := tx.EventAppend(ctx, p.event("pin.added", actor.UserID, m.ChannelSeq))
	return p, ev, err
}

// PinRemove unpins a message of a channel and appends pin.removed (pinned_by is who pinned it;
// the envelope's actor is who unpinned). Codes: not_found (channel, or no such pin),
// forbidden (guards).
func (tx *Tx) PinRemove(ctx context.Context, actor Actor, channelID, messageID string) (Pin, Event, error) {
	c, _, err := tx.ChannelForChange(ctx, actor, channelID)
	if err != nil {
		return Pin{}, Event{}, err
	}
	p, ok, err := tx.pinDelete(ctx, c.WorkspaceID, c.ID, messageID)
	if err != nil {
		return Pin{}, Event{}, err
	}
	if !ok {
		return Pin{}, Event{}, NotFound("pin")
	}
	var seq *int64
	if err := tx.queryRow(ctx, `SELECT channel_seq FROM messages WHERE workspace_id = $1 AND id = $2`,
		c.WorkspaceID, messageID).Scan(&seq); err != nil {
		return Pin{}, Event{}, err
	}
	ev, err := tx.EventAppend(ctx, p.event("pin.removed", actor.UserID, seq))
	return p, ev, err
}

// pinDelete removes a message's pin, if any, and gives its slot back; ok reports whether there
// was one.
func (tx *Tx) pinDelete(ctx context.Context, workspaceID, channelID, messageID string) (p Pin, ok bool, err error) {
	if channelID == "" {
		return Pin{}, false, nil
	}
	p = Pin{WorkspaceID: workspaceID, ChannelID: channelID, MessageID: messageID}
	err = tx.queryRow(ctx, `DELETE FROM pins WHERE workspace_id = $1 AND channel_id = $2 AND message_id = $3
		RETURNING pinned_by, pinned_at`, workspaceID, channelID, messageID).Scan(&p.PinnedBy, &p.PinnedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Pin{}, false, nil
	}
	if err != nil {
		return Pin{}, false, err
	}
	_, err = tx.exec(ctx, `UPDATE channel_pin_counts SET count = count - 1 WHERE workspace_id = $1 AND channel_id = $2`,
		workspaceID, channelID)
	return p, true, err
}

// PinList returns a channel's pins, newest first, each with its full message. Codes: those of
// ChannelForRead.
func (tx *Tx) PinList(ctx context.Context, actor Actor, channelID string) ([]Pin, error) {
	c, _, err := tx.ChannelForRead(ctx, actor, channelID)
	if err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, `SELECT p.pinned_by, p.pinned_at, `+messageColumns+`
		FROM pins p JOIN `+messageFrom+` ON m.id = p.message_id
		WHERE p.workspace_id = $1 AND p.channel_id = $2
		ORDER BY p.pinned_at DESC, p.message_id DESC`, c.WorkspaceID, c.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	pins := []Pin{}
	var msgs []Message
	for rows.Next() {
		p := Pin{WorkspaceID: c.WorkspaceID, ChannelID: c.ID}
		m, err := scanMessage(pinRow{rows, &p})
		if err != nil {
			return nil, err
		}
		p.MessageID = m.ID
		pins, msgs = append(pins, p), append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	if err := tx.messagesHydrate(ctx, actor.UserID, msgs); err != nil {
		return nil, err
	}
	for i := range pins {
		pins[i].Message = &msgs[i]
	}
	return pins, nil
}

// pinRow scans a pin's own columns ahead of the message columns of the same row.
type pinRow struct {
	row pgx.Row
	p   *Pin
}

func (r pinRow) Scan(dest ...any) error {
	return r.row.Scan(append([]any{&r.p.PinnedBy, &r.p.PinnedAt}, dest...)...)
}
