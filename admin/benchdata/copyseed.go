package benchdata

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/natterchat/natter/persist"
)

// Shares of the seeded messages, as a large team's history has them.
const (
	dmShare       = 0.10 // messages in direct conversations
	replyShare    = 0.20 // thread replies (the rest are roots)
	reactionShare = 0.08 // messages with reactions (one emoji, one to three people)
	editShare     = 0.02 // messages edited once by their author
	deleteShare   = 0.01 // messages deleted by their author
	threadRing    = 5    // persist's ring of a thread's latest distinct repliers
	recentRoots   = 16   // replies go to one of a place's last roots
	// personaDMMessages is how many messages each persona's first direct conversation gets
	// beyond its share: its busiest, whose latest page the reads time, holds more than a page
	// of 100 roots in either workspace, so the small workspace times the same read as the
	// large one (with 10,000 messages spread over 1,040 conversations, it held about one).
	personaDMMessages = 200
)

var emojis = []string{"thumbsup", "tada", "eyes", "heart", "rocket", "white_check_mark", "joy", "pray"}

// history writes n messages into a workspace with COPY, row for row what persist's writes leave
// behind once the event log has been pruned (`natter admin events prune`): messages with their
// place and thread sequences (gapless, in creation order), edits and deletions (a deleted
// message keeps its row with an empty body, no quote and no reactions), thread states (replies
// counted live, the last sequence and the repliers' ring counted over every reply), reactions
// with their per-emoji counts, and each place's counter (last_seq, a conversation's
// last_activity_at). Writing through the API's own paths took about 300 messages/s on this
// machine (a million would take an hour); COPY writes the same rows some thirty times as fast.
// The year of history ends now; created_at grows with the sequences.
type history struct {
	w     *world
	p     people
	r     *rand.Rand
	words *rand.Zipf
	chans *rand.Zipf
	// authors draws channel authors among everyone but the personas and the owner, who post
	// only in their direct conversations.
	authors *rand.Zipf
	// personaDMs are each persona's first direct conversation (indexes into w.dms), which
	// personaShare of the conversations' messages go to (personaDMMessages each).
	personaDMs   []int
	personaShare float64

	n, done  int
	start    time.Time
	step     time.Duration
	seq      []int64     // per place: channels, then conversations
	activity []time.Time // per conversation: its last message
	roots    [][]string  // per place: its last live roots
	threads  map[string]*threadAgg
	order    []string // thread roots in order of first reply
	reacts   [][]any  // reactions rows
	counts   [][]any  // reaction_counts rows
	row      []any
}

type threadAgg struct {
	inChannel  bool // the reads time a channel's thread, which both readers may read
	last, live int64
	at         time.Time
	ring       []string
}

func (w *world) seedHistory(ctx context.Context, conn *pgx.Conn, p people, n int, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 7))
	places := len(w.channels) + len(w.dms)
	h := &history{w: w, p: p, r: r, words: wordZipf(r), chans: rand.NewZipf(r, 1.1, 4, uint64(len(w.channels)-1)),
		authors: rand.NewZipf(r, 1.05, 8, uint64(len(p.users)-4)), n: n,
		start: time.Now().Add(-365 * 24 * time.Hour), step: 365 * 24 * time.Hour / time.Duration(n+1),
		seq: make([]int64, places), activity: make([]time.Time, len(w.dms)), roots: make([][]string, places),
		threads: map[string]*threadAgg{}}
	for _, persona := range []persist.User{p.nothing(), p.everything()} {
		if i := slices.IndexFunc(w.dms, func(d dmOf) bool { return d.members[0].ID == persona.ID }); i >= 0 {
			h.personaDMs = append(h.personaDMs, i)
		}
	}
	h.personaShare = min(0.5, float64(len(h.personaDMs)*personaDMMessages)/(float64(n)*dmShare))
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"messages"}, []string{"id", "route_id", "workspace_id", "channel_id", "dm_id",
		"author_id", "parent_message_id", "thread_root_id", "channel_seq", "thread_seq", "kind", "body", "created_at",
		"edited_at", "deleted_at"}, h); err != nil {
		return fmt.Errorf("copy messages: %w", err)
	}
	w.thread = h.busiestChannelThread()
	states := make([][]any, 0, len(h.order))
	for _, id := range h.order {
		t := h.threads[id]
		states = append(states, []any{id, w.ws.ID, t.last, t.live, t.at, t.ring})
	}
	for _, c := range []struct {
		table string
		cols  []string
		rows  [][]any
	}{
		{"thread_states", []string{"root_message_id", "workspace_id", "last_thread_seq", "reply_count", "last_reply_at", "last_reply_author_ids"}, states},
		{"reactions", []string{"message_id", "emoji", "user_id", "workspace_id", "created_at"}, h.reacts},
		{"reaction_counts", []string{"message_id", "emoji", "workspace_id", "count", "created_at"}, h.counts},
	} {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{c.table}, c.cols, pgx.CopyFromRows(c.rows)); err != nil {
			return fmt.Errorf("copy %s: %w", c.table, err)
		}
	}
	ids, seqs := make([]string, len(w.channels)), h.seq[:len(w.channels)]
	for i, c := range w.channels {
		ids[i] = c.ID
	}
	if _, err := tx.Exec(ctx, `UPDATE channels c SET last_seq = u.seq FROM unnest($2::text[], $3::bigint[]) AS u(id, seq)
		WHERE c.workspace_id = $1 AND c.id = u.id`, w.ws.ID, ids, seqs); err != nil {
		return err
	}
	dmIDs, at := make([]string, len(w.dms)), make([]time.Time, len(w.dms))
	for i, d := range w.dms {
		dmIDs[i], at[i] = d.id, h.activity[i]
		if at[i].IsZero() {
			at[i] = h.start
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE dms d SET last_seq = u.seq, last_activity_at = greatest(d.last_activity_at, u.at)
		FROM unnest($2::text[], $3::bigint[], $4::timestamptz[]) AS u(id, seq, at)
		WHERE d.workspace_id = $1 AND d.id = u.id`, w.ws.ID, dmIDs, h.seq[len(w.channels):], at); err != nil {
		return err
	}
	// Each place's deleted roots, as persist.MessageDelete keeps them (unread counts).
	for _, place := range [][2]string{{"channels", "channel_id"}, {"dms", "dm_id"}} {
		table, col := place[0], place[1]
		if _, err := tx.Exec(ctx, `UPDATE `+table+` p SET deleted_roots = (SELECT count(*) FROM messages m
			WHERE m.`+col+` = p.id AND m.channel_seq IS NOT NULL AND m.deleted_at IS NOT NULL) WHERE p.workspace_id = $1`, w.ws.ID); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// busiestChannelThread is the channel root with most replies (the first to get them among
// equals): the thread the reads time, which both readers may read, unlike a thread in a
// persona's conversation (where most replies of a small history are).
func (h *history) busiestChannelThread() string {
	best := ""
	for _, id := range h.order {
		if t := h.threads[id]; t.inChannel && (best == "" || t.last > h.threads[best].last) {
			best = id
		}
	}
	return best
}

// Next makes the next message row (pgx.CopyFromSource).
func (h *history) Next() bool {
	if h.done == h.n {
		return false
	}
	h.done++
	r, w := h.r, h.w
	at := h.start.Add(time.Duration(h.done) * h.step).UTC().Truncate(time.Microsecond)
	var place int
	var channelID, dmID string
	var author persist.User
	if r.Float64() < dmShare {
		i := r.IntN(len(w.dms))
		if len(h.personaDMs) > 0 && r.Float64() < h.personaShare {
			i = h.personaDMs[r.IntN(len(h.personaDMs))]
		}
		place, dmID, author = len(w.channels)+i, w.dms[i].id, w.dms[i].members[r.IntN(2)]
		h.activity[i] = at
	} else {
		i := int(h.chans.Uint64())
		place, channelID, author = i, w.channels[i].ID, h.p.users[3+h.authors.Uint64()]
	}
	id := persist.NewID(persist.PrefixMessage, at)
	body := body(r, h.words)
	var routeID, parentID, rootID any = persist.RouteID("M", id), nil, id
	var channelSeq, threadSeq any
	roots := h.roots[place]
	if len(roots) > 0 && r.Float64() < replyShare {
		root := roots[r.IntN(len(roots))]
		t := h.threads[root]
		if t == nil {
			t = &threadAgg{inChannel: channelID != ""}
			h.threads[root] = t
			h.order = append(h.order, root)
		}
		t.last++
		t.live++
		t.at = at
		t.ring = append([]string{author.ID}, slices.DeleteFunc(t.ring, func(a string) bool { return a == author.ID })...)
		t.ring = t.ring[:min(len(t.ring), threadRing)]
		routeID, parentID, rootID, threadSeq = nil, root, root, t.last
	} else {
		h.seq[place]++
		channelSeq = h.seq[place]
	}
	var editedAt, deletedAt any
	switch x := r.Float64(); {
	case x < deleteShare:
		deletedAt, body = at.Add(time.Minute), ""
		if parentID != nil {
			h.threads[parentID.(string)].live--
		}
	case x < deleteShare+editShare:
		editedAt, body = at.Add(time.Minute), body+" (edited)"
		fallthrough
	default:
		if channelSeq != nil {
			h.roots[place] = append(roots, id)[max(0, len(roots)+1-recentRoots):]
		}
		if dmID == "" && x > 1-reactionShare {
			emoji := emojis[r.IntN(len(emojis))]
			people := 1 + r.IntN(3)
			first := r.IntN(len(h.p.users) - 3)
			for k := range people { // distinct people: consecutive ones
				h.reacts = append(h.reacts, []any{id, emoji, h.p.users[3+(first+k)%(len(h.p.users)-3)].ID, w.ws.ID, at})
			}
			h.counts = append(h.counts, []any{id, emoji, w.ws.ID, int64(people), at})
		}
	}
	h.row = []any{id, routeID, w.ws.ID, nullable(channelID), nullable(dmID), author.ID, parentID, rootID, channelSeq, threadSeq,
		persist.MessageKindMessage, body, at, editedAt, deletedAt}
	return true
}

// Values is the row Next made.
func (h *history) Values() ([]any, error) { return h.row, nil }

// Err reports no failure: the rows are generated.
func (h *history) Err() error { return nil }

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
