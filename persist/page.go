package persist

import (
	"context"
	"slices"
)

// Page limits.
const (
	// DefaultPageLimit is the page size when none (or one out of range) is asked for.
	DefaultPageLimit = 100
	// MaxPageLimit is the largest page.
	MaxPageLimit = 200
)

// WindowMode selects which part of a sequence a page shows.
type WindowMode int

const (
	// WindowEarliest is the first messages (no cursor).
	WindowEarliest WindowMode = iota
	// WindowLatest is the last messages.
	WindowLatest
	// WindowBefore is the nearest messages strictly before Seq.
	WindowBefore
	// WindowAfter is the nearest messages strictly after Seq.
	WindowAfter
	// WindowAround is a balanced window including Seq, spare room filled from the other side.
	WindowAround
)

// Window asks for one page of a sequence (a conversation's roots by channel_seq, a thread's
// replies by thread_seq). Limit outside 1..MaxPageLimit means DefaultPageLimit.
type Window struct {
	Mode  WindowMode
	Seq   int64
	Limit int
}

// Page is a window of messages ascending by sequence, tombstones included. Its bounds and edge
// flags describe the returned window; an empty page has zero bounds and false flags.
type Page struct {
	Messages  []Message `json:"messages"`
	OldestSeq int64     `json:"oldest_seq"`
	NewestSeq int64     `json:"newest_seq"`
	HasOlder  bool      `json:"has_older"`
	HasNewer  bool      `json:"has_newer"`
}

// sequence is what a page runs over: the messages matching filter (with $1 the workspace and
// $2 the owner id) ordered by the column seq.
type sequence struct {
	filter string
	seq    string
	owner  string
}

func rootsOf(p Place) sequence {
	if p.ChannelID != "" {
		return sequence{filter: `m.workspace_id = $1 AND m.channel_id = $2 AND m.channel_seq IS NOT NULL`, seq: "m.channel_seq", owner: p.ChannelID}
	}
	return sequence{filter: `m.workspace_id = $1 AND m.dm_id = $2 AND m.channel_seq IS NOT NULL`, seq: "m.channel_seq", owner: p.DMID}
}

func repliesOf(rootID string) sequence {
	return sequence{filter: `m.workspace_id = $1 AND m.thread_root_id = $2 AND m.thread_seq IS NOT NULL`, seq: "m.thread_seq", owner: rootID}
}

// MessageList returns a page of root messages of a channel or direct conversation the actor may
// read, hydrated. Codes: those of the read guards.
func (tx *Tx) MessageList(ctx context.Context, actor Actor, p Place, w Window) (Page, error) {
	st, _, err := tx.placeFor(ctx, actor, p, accessRead)
	if err != nil {
		return Page{}, err
	}
	return tx.pageLoad(ctx, actor.UserID, st.WorkspaceID, rootsOf(p), w)
}

// pageLoad reads one window of a sequence with its bounds, flags, reactions and attachments: a
// fixed number of queries whatever the page size.
func (tx *Tx) pageLoad(ctx context.Context, viewerID, workspaceID string, s sequence, w Window) (Page, error) {
	limit := w.Limit
	if limit < 1 || limit > MaxPageLimit {
		limit = DefaultPageLimit
	}
	var msgs []Message
	var err error
	switch w.Mode {
	case WindowEarliest:
		msgs, err = tx.pageRange(ctx, workspaceID, s, ">", 0, limit)
	case WindowAfter:
		msgs, err = tx.pageRange(ctx, workspaceID, s, ">", w.Seq, limit)
	case WindowBefore:
		msgs, err = tx.pageRange(ctx, workspaceID, s, "<", w.Seq, limit)
	case WindowLatest:
		msgs, err = tx.pageRange(ctx, workspaceID, s, "<", 1<<62, limit)
	case WindowAround:
		msgs, err = tx.pageAround(ctx, workspaceID, s, w.Seq, limit)
	}
	if err != nil {
		return Page{}, err
	}
	page := Page{Messages: msgs}
	if len(msgs) == 0 {
		return page, nil
	}
	page.OldestSeq, page.NewestSeq = seqOf(msgs[0]), seqOf(msgs[len(msgs)-1])
	if err := tx.queryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM messages m WHERE `+s.filter+` AND `+s.seq+` < $3),
			EXISTS (SELECT 1 FROM messages m WHERE `+s.filter+` AND `+s.seq+` > $4)`,
		workspaceID, s.owner, page.OldestSeq, page.NewestSeq).Scan(&page.HasOlder, &page.HasNewer); err != nil {
		return Page{}, err
	}
	return page, tx.messagesHydrate(ctx, viewerID, msgs)
}

// pageRange returns up to limit messages whose sequence is op ("<" or ">") bound, nearest to the
// bound first, then puts them in ascending order.
func (tx *Tx) pageRange(ctx context.Context, workspaceID string, s sequence, op string, bound int64, limit int) ([]Message, error) {
	order := "ASC"
	if op == "<" || op == "<=" {
		order = "DESC"
	}
	msgs, err := tx.scanMessages(tx.query(ctx, `SELECT `+messageColumns+` FROM `+messageFrom+`
		WHERE `+s.filter+` AND `+s.seq+` `+op+` $3 ORDER BY `+s.seq+` `+order+` LIMIT $4`,
		workspaceID, s.owner, bound, limit))
	if order == "DESC" {
		slices.Reverse(msgs)
	}
	return msgs, err
}

// pageAround returns a window including seq: half the room before it (seq itself counted
// there), half after, and whatever one side cannot use goes to the other.
func (tx *Tx) pageAround(ctx context.Context, workspaceID string, s sequence, seq int64, limit int) ([]Message, error) {
	before, err := tx.pageRange(ctx, workspaceID, s, "<=", seq, limit)
	if err != nil {
		return nil, err
	}
	after, err := tx.pageRange(ctx, workspaceID, s, ">", seq, limit)
	if err != nil {
		return nil, err
	}
	nb, na := aroundSplit(len(before), len(after), limit)
	return append(before[len(before)-nb:], after[:na]...), nil
}

// aroundSplit decides how many of the available messages before (seq included) and after a
// pivot a window of limit takes: ceil(limit/2) before and floor(limit/2) after, spare room on
// one side going to the other.
func aroundSplit(before, after, limit int) (nb, na int) {
	nb = min(before, max(limit-after, limit-limit/2))
	na = min(after, limit-nb)
	return nb, na
}

// seqOf is a message's position in its sequence: channel_seq for roots, thread_seq for replies.
func seqOf(m Message) int64 {
	if m.ChannelSeq != nil {
		return *m.ChannelSeq
	}
	if m.ThreadSeq != nil {
		return *m.ThreadSeq
	}
	return 0
}
