package persist

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
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
	// PrivateChannel is true for an event of a private channel. The relay sets it from the
	// channel (visibility never changes) to choose the subject; it is no part of the envelope.
	PrivateChannel bool
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

// EventAppend writes the mutation's event as the last write of its work: it takes the next
// cursor from the workspace's counter row, whose lock is held until commit, so cursor order is
// commit order and the sequence has no gaps. The store wakes the relay after commit.
//
// In a plain transaction the first event of a workspace bumps the head and inserts the row in
// one statement; later ones find the head locked by this transaction, get their cursors here and
// are inserted together before commit (flushEvents). In a group transaction (Batch) every event
// waits for the end of the group: its cursor is zero until the group's one event statement
// (commitGroup) has given it one.
func (tx *Tx) EventAppend(ctx context.Context, in EventInput) (Event, error) {
	payload, err := json.Marshal(in.Payload)
	if err != nil {
		return Event{}, fmt.Errorf("encode %s payload: %w", in.Type, err)
	}
	ev := Event{ID: NewID(PrefixEvent, tx.now), WorkspaceID: in.WorkspaceID, Type: in.Type,
		ChannelID: in.ChannelID, DirectConversationID: in.DirectConversationID, MessageID: in.MessageID,
		Seq: in.Seq, ActorID: in.ActorID, CreatedAt: tx.now, Payload: payload}
	if tx.group != nil {
		// A group appends its events last: cursors are given at commit (commitGroup) and
		// put into the requests' answers then (see Batch).
		if !slices.Contains(tx.touched, in.WorkspaceID) {
			tx.touched = append(tx.touched, in.WorkspaceID)
		}
		tx.queued = append(tx.queued, ev)
		return ev, nil
	}
	if head, ok := tx.heads[in.WorkspaceID]; ok {
		ev.Cursor = head + 1
		tx.heads[in.WorkspaceID] = ev.Cursor
		tx.queued = append(tx.queued, ev)
		return ev, nil
	}
	if err := tx.queryRow(ctx, `WITH head AS (UPDATE event_heads SET last_cursor = last_cursor + 1
			WHERE workspace_id = $1 RETURNING last_cursor)
		INSERT INTO events (workspace_id, cursor, id, type, channel_id,
			direct_conversation_id, message_id, seq, actor_id, created_at, payload)
		SELECT $1, head.last_cursor, $2, $3, nullif($4, ''), nullif($5, ''), nullif($6, ''), $7, nullif($8, ''), $9, $10
		FROM head RETURNING cursor`,
		ev.WorkspaceID, ev.ID, ev.Type, ev.ChannelID, ev.DirectConversationID, ev.MessageID,
		ev.Seq, ev.ActorID, ev.CreatedAt, payload).Scan(&ev.Cursor); err != nil {
		return Event{}, notFoundAs(err, "workspace")
	}
	if tx.heads == nil {
		tx.heads = map[string]int64{}
	}
	tx.heads[in.WorkspaceID] = ev.Cursor
	tx.touched = append(tx.touched, in.WorkspaceID)
	return ev, nil
}

// eventArrays lays the queued events out as the columns of an unnest.
func (tx *Tx) eventArrays() []any {
	n := len(tx.queued)
	ws, ids, types, chans, dms, msgs, actors := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	cursors, seqs, at, payloads := make([]int64, n), make([]*int64, n), make([]time.Time, n), make([]string, n)
	for i, e := range tx.queued {
		ws[i], ids[i], types[i], chans[i], dms[i], msgs[i], actors[i] = e.WorkspaceID, e.ID, e.Type,
			e.ChannelID, e.DirectConversationID, e.MessageID, e.ActorID
		cursors[i], seqs[i], at[i], payloads[i] = e.Cursor, e.Seq, e.CreatedAt, string(e.Payload)
	}
	return []any{ws, cursors, ids, types, chans, dms, msgs, seqs, actors, at, payloads}
}

const eventUnnest = `unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
	$8::bigint[], $9::text[], $10::timestamptz[], $11::text[]) WITH ORDINALITY AS u(w, c, i, t, ch, d, m, s, a, at, p, ord)`

// commitGroup ends a group transaction: one statement moves each workspace's head past the
// group's events and inserts them with the cursors that follow, in arrival order, and it goes
// with the COMMIT in one round trip (see groupTx). It returns the cursor of each event by id.
// The head row is locked only from here to the commit, never while a request of the group waits
// for another lock. A workspace without a head row gives its events no cursor, which the
// events' primary key refuses, so the statement fails and nothing is committed; it cannot
// happen while the group's writes hold the workspace's rows, which its deletion has to lock.
func (tx *Tx) commitGroup(gtx *groupTx) (map[string]int64, error) {
	ctx := tx.group.ctx
	if len(tx.queued) == 0 {
		return nil, gtx.Commit(ctx)
	}
	cursors := make(map[string]int64, len(tx.queued))
	err := gtx.commitWith(ctx, func(rows pgx.Rows) error {
		var id string
		var c int64
		_, err := pgx.ForEachRow(rows, []any{&id, &c}, func() error { cursors[id] = c; return nil })
		return err
	}, `WITH u AS (SELECT * FROM `+eventUnnest+`),
		head AS (
			UPDATE event_heads h SET last_cursor = h.last_cursor + n.count
			FROM (SELECT w, count(*) AS count FROM u GROUP BY w) n
			WHERE h.workspace_id = n.w
			RETURNING h.workspace_id, h.last_cursor - n.count AS base)
		INSERT INTO events (workspace_id, cursor, id, type, channel_id, direct_conversation_id,
			message_id, seq, actor_id, created_at, payload)
		SELECT u.w, head.base + row_number() OVER (PARTITION BY u.w ORDER BY u.ord), u.i, u.t, nullif(u.ch, ''),
			nullif(u.d, ''), nullif(u.m, ''), u.s, nullif(u.a, ''), u.at, u.p::json
		FROM u LEFT JOIN head ON head.workspace_id = u.w
		RETURNING id, cursor`, tx.eventArrays()...)
	if err != nil {
		return nil, err
	}
	for i := range tx.queued {
		tx.queued[i].Cursor = cursors[tx.queued[i].ID]
	}
	tx.group.appended, tx.queued = tx.queued, nil
	return cursors, nil
}

// flushEvents inserts the queued events and moves each workspace's head to its last cursor, in
// one statement; the transaction already holds every head row it moves.
func (tx *Tx) flushEvents(ctx context.Context) error {
	if len(tx.queued) == 0 {
		return nil
	}
	_, err := tx.exec(ctx, `WITH ev AS (
			INSERT INTO events (workspace_id, cursor, id, type, channel_id, direct_conversation_id,
				message_id, seq, actor_id, created_at, payload)
			SELECT w, c, i, t, nullif(ch, ''), nullif(d, ''), nullif(m, ''), s, nullif(a, ''), at, p::json
			FROM `+eventUnnest+`
			RETURNING workspace_id, cursor)
		UPDATE event_heads h SET last_cursor = top.c
		FROM (SELECT workspace_id, max(cursor) AS c FROM ev GROUP BY workspace_id) top
		WHERE h.workspace_id = top.workspace_id`, tx.eventArrays()...)
	tx.queued = tx.queued[:0]
	return err
}

const eventColumns = `id, workspace_id, cursor, type, coalesce(channel_id, ''), coalesce(direct_conversation_id, ''),
	coalesce(message_id, ''), seq, coalesce(actor_id, ''), created_at, payload`

func eventDest(e *Event) []any {
	// The payload as plain bytes: pgx hands a *json.RawMessage to json.Unmarshal, which scans the
	// whole payload once more only to copy it (the column is json, stored as EventAppend wrote it).
	return []any{&e.ID, &e.WorkspaceID, &e.Cursor, &e.Type, &e.ChannelID, &e.DirectConversationID,
		&e.MessageID, &e.Seq, &e.ActorID, &e.CreatedAt, (*[]byte)(&e.Payload)}
}

// EventListAfter returns up to limit events of a workspace with cursor > after, in cursor order.
// This is the raw log, for the relay; readers go through EventPageFor, which applies visibility.
func (tx *Reader) EventListAfter(ctx context.Context, workspaceID string, after int64, limit int) ([]Event, error) {
	rows, err := tx.query(ctx, `SELECT `+eventColumns+` FROM events
		WHERE workspace_id = $1 AND cursor > $2 ORDER BY cursor LIMIT $3`, workspaceID, after, limit)
	if err != nil {
		return nil, err
	}
	return scanEvents(rows)
}

func scanEvents(rows pgx.Rows) ([]Event, error) {
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

// EventWindow is a workspace's log bounds: cursors PrunedThrough+1 … Head are retained.
type EventWindow struct {
	Head          int64
	PrunedThrough int64
}

// EventWindowGet reads a workspace's log bounds. Codes: not_found.
func (tx *Tx) EventWindowGet(ctx context.Context, workspaceID string) (EventWindow, error) {
	var w EventWindow
	err := tx.queryRow(ctx, `SELECT last_cursor, pruned_through FROM event_heads WHERE workspace_id = $1`,
		workspaceID).Scan(&w.Head, &w.PrunedThrough)
	return w, notFoundAs(err, "workspace")
}

// CheckResume says whether a reader positioned after cursor can continue from the log: 0 is the
// start of the retained log; a cursor past the head was never issued and one before the retained
// window has lost events. Codes: resync_required.
func (w EventWindow) CheckResume(after int64) error {
	if after > w.Head {
		return Errorf(CodeResyncRequired, "cursor %d is unknown in this workspace; resync through the message endpoints", after)
	}
	if after > 0 && after < w.PrunedThrough {
		return Errorf(CodeResyncRequired, "cursor %d is older than the retained events; resync through the message endpoints", after)
	}
	return nil
}

// EventPage is one page of backfill.
type EventPage struct {
	Events []Event
	// Next is where the next page starts: the last cursor read, visible or not, so a reader
	// skips what it may not see; the request's cursor when nothing was read.
	Next    int64
	HasMore bool
	// Tail is the newest cursor the viewer may see, read before the page (0: none); set only
	// when asked for.
	Tail int64
}

// eventScanLimit bounds the events one backfill request reads past invisible ones.
const eventScanLimit = 5000

// EventPageFor is backfill: up to limit events after cursor that actor may see, in cursor order.
// With withTail it first reads the newest cursor the actor may see, so a client can open its
// socket from there without a race. Codes: not_found, forbidden, resync_required.
func (tx *Tx) EventPageFor(ctx context.Context, actor Actor, workspaceID string, after int64, limit int, withTail bool) (EventPage, error) {
	v, err := tx.ViewerFor(ctx, actor, workspaceID)
	if err != nil {
		return EventPage{}, err
	}
	win, err := tx.EventWindowGet(ctx, workspaceID)
	if err != nil {
		return EventPage{}, err
	}
	if err := win.CheckResume(after); err != nil {
		return EventPage{}, err
	}
	page := EventPage{Next: after, Events: []Event{}}
	if withTail {
		if page.Tail, err = tx.eventTailFor(ctx, v, win.Head); err != nil {
			return EventPage{}, err
		}
	}
	pos := after
	for scanned := 0; len(page.Events) < limit && scanned < eventScanLimit; {
		raw, err := tx.EventListAfter(ctx, workspaceID, pos, 500)
		if err != nil {
			return EventPage{}, err
		}
		if len(raw) == 0 {
			break
		}
		scanned += len(raw)
		visible, err := tx.visibleOf(ctx, v, raw)
		if err != nil {
			return EventPage{}, err
		}
		pos = raw[len(raw)-1].Cursor
		if room := limit - len(page.Events); len(visible) >= room {
			visible = visible[:room]
			pos = visible[room-1].Cursor
		}
		page.Events = append(page.Events, visible...)
		if len(raw) < 500 {
			break
		}
	}
	page.Next = pos
	page.HasMore = pos < win.Head
	return page, nil
}

// eventTailFor is the newest cursor at or below head that v may see, 0 when none.
func (tx *Tx) eventTailFor(ctx context.Context, v Viewer, head int64) (int64, error) {
	for below := head + 1; below > 1; {
		rows, err := tx.query(ctx, `SELECT `+eventColumns+` FROM events
			WHERE workspace_id = $1 AND cursor < $2 ORDER BY cursor DESC LIMIT 500`, v.WorkspaceID, below)
		if err != nil {
			return 0, err
		}
		raw, err := scanEvents(rows)
		if err != nil || len(raw) == 0 {
			return 0, err
		}
		visible, err := tx.visibleOf(ctx, v, raw)
		if err != nil || len(visible) > 0 {
			if len(visible) > 0 {
				return visible[0].Cursor, nil
			}
			return 0, err
		}
		below = raw[len(raw)-1].Cursor
	}
	return 0, nil
}

// EventPruneParams choose what `natter admin events prune` deletes; at least one is set.
type EventPruneParams struct {
	// OlderThan deletes events created before this instant.
	OlderThan *time.Time
	// KeepLatest keeps at least this many of the newest events whatever their age.
	KeepLatest *int64
}

// EventPruneResult says what a prune did.
type EventPruneResult struct {
	Deleted       int64
	PrunedThrough int64 // the oldest retained cursor is PrunedThrough+1
}

// EventPrune deletes a workspace's oldest events by age and count, and records the new retained
// window; the relay applies the same window to the stream, and readers behind it must resync.
// Codes: invalid_request (neither limit), not_found (workspace).
func (tx *Tx) EventPrune(ctx context.Context, workspaceID string, p EventPruneParams) (EventPruneResult, error) {
	if p.OlderThan == nil && p.KeepLatest == nil {
		return EventPruneResult{}, Invalid("say what to prune: an age limit, a number of newest events to keep, or both")
	}
	if p.KeepLatest != nil && *p.KeepLatest < 0 {
		return EventPruneResult{}, Invalid("the number of events to keep must not be negative")
	}
	var win EventWindow
	if err := tx.queryRow(ctx, `SELECT last_cursor, pruned_through FROM event_heads WHERE workspace_id = $1 FOR UPDATE`,
		workspaceID).Scan(&win.Head, &win.PrunedThrough); err != nil {
		return EventPruneResult{}, notFoundAs(err, "workspace")
	}
	through := win.Head
	if p.KeepLatest != nil {
		through = min(through, win.Head-*p.KeepLatest)
	}
	if p.OlderThan != nil {
		var old int64
		if err := tx.queryRow(ctx, `SELECT coalesce(max(cursor), 0) FROM events WHERE workspace_id = $1 AND created_at < $2`,
			workspaceID, *p.OlderThan).Scan(&old); err != nil {
			return EventPruneResult{}, err
		}
		through = min(through, old)
	}
	res := EventPruneResult{PrunedThrough: win.PrunedThrough}
	if through <= win.PrunedThrough {
		return res, nil
	}
	tag, err := tx.exec(ctx, `DELETE FROM events WHERE workspace_id = $1 AND cursor <= $2`, workspaceID, through)
	if err != nil {
		return res, err
	}
	// Delivery attempts of pruned events go with them (a listing that names one as its cursor
	// is then refused).
	if _, err := tx.exec(ctx, `DELETE FROM event_delivery_attempts WHERE workspace_id = $1 AND event_cursor <= $2`, workspaceID, through); err != nil {
		return res, err
	}
	if _, err := tx.exec(ctx, `UPDATE event_heads SET pruned_through = $2 WHERE workspace_id = $1`, workspaceID, through); err != nil {
		return res, err
	}
	return EventPruneResult{Deleted: tag.RowsAffected(), PrunedThrough: through}, nil
}
