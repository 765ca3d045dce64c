package persist

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// searchFound is one run of a search's statement: its page (one more than the limit when
// there is another), how many candidates it read, and the newest of them.
type searchFound struct {
	results    []SearchResult
	candidates int
	topAt      time.Time
	topID      string
}

// searchRead is what one statement of a search reads: with walk < 0 the workspace's (or the
// place's) messages newest first until it has the candidates, with walk > 0 the same over at
// most walk rows, with days the day index's entries of those days (searchByDays), and
// otherwise the full-text index for the messages since since (zero: all).
type searchRead struct {
	since time.Time
	walk  int
	days  []int32
}

// searchRun runs one statement of a search.
func (tx *Tx) searchRun(ctx context.Context, actor Actor, guest bool, p SearchParams, after *searchCursor, r searchRead) (searchFound, error) {
	sql, args := searchStatement(actor, guest, p, after, r)
	// Each search is planned for its own words (an unnamed statement, never a generic plan):
	// the plan that suits a common word (the newest messages, until the page is full) is the
	// wrong one for a rare word (the full-text index), and only the words tell them apart.
	rows, err := tx.query(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
	if err != nil {
		return searchFound{}, err
	}
	defer rows.Close()
	f := searchFound{results: []SearchResult{}}
	for rows.Next() {
		var r SearchResult
		var u User
		var headline string
		dest := []any{&r.ID, &r.WorkspaceID, &r.ChannelID, &r.DirectConversationID, &r.ParentMessageID,
			&r.ThreadRootID, &r.ChannelSeq, &r.ThreadSeq, &r.CreatedAt, &r.EditedAt, &r.rank, &headline,
			&f.topAt, &f.topID, &f.candidates}
		if err := rows.Scan(append(dest, userDest(&u)...)...); err != nil {
			return searchFound{}, err
		}
		r.AuthorID, r.Author = u.ID, u.Public()
		r.Snippet, r.Highlights = highlightRanges(headline)
		f.results = append(f.results, r)
	}
	return f, rows.Err()
}

// searchStatement is the statement of a search page and its arguments. Both orders read the
// matches newest first and stop early: sort=newest at the page (after the cursor), relevance at
// the RelevanceWindow newest matches (below the first page's newest), which it then ranks.
// Guests read only the guest channel, and private channels only their members (the rules of
// ChannelForRead); direct conversations are read by their members, and by bot tokens only with dms:read (the rule of DMForRead); a
// narrowed search was checked by the place's own read guard.
func searchStatement(actor Actor, guest bool, p SearchParams, after *searchCursor, r searchRead) (string, []any) {
	args := []any{p.WorkspaceID, p.Query, p.Limit + 1, markStart + markStop,
		`StartSel="` + markStart + `", StopSel="` + markStop + `", MaxWords=35, MinWords=15, ShortWord=2`}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	// scope is the narrowing conversation's condition, as the estimates have it, or else every
	// place the actor may read; either way it follows another condition (" AND …").
	var scope string
	if scope, args = searchScopeFilter(p, args); scope == "" {
		scope = ` AND ` + readablePlaces("m", actor, guest, arg)
	}
	order, window, keyset, candidates := `s.rank DESC, s.created_at DESC, s.id DESC`, "true", "true", strconv.Itoa(RelevanceWindow)
	switch {
	case p.Sort == SearchSortNewest:
		order, candidates = `s.created_at DESC, s.id DESC`, "$3"
		if after != nil {
			window = `(m.created_at, m.id) < (` + arg(after.At) + `, ` + arg(after.ID) + `)`
		}
	case after != nil:
		window = `(m.created_at, m.id) <= (` + arg(after.TopAt) + `, ` + arg(after.TopID) + `)`
		keyset = `(s.rank, s.created_at, s.id) < (` + arg(after.Rank) + `::real, ` + arg(after.At) + `, ` + arg(after.ID) + `)`
	}
	if !r.since.IsZero() {
		window += ` AND m.created_at >= ` + arg(r.since)
	}
	// ts_match_vq is what @@ calls; written as a function the planner cannot serve it from the
	// full-text index, so the statement walks the newest messages (see searchSmallWorkspace).
	from := `messages m`
	where := `m.workspace_id = $1 AND m.deleted_at IS NULL AND m.search @@ websearch_to_tsquery('english', $2)` +
		scope + ` AND ` + window
	switch {
	case r.walk < 0:
		where = `m.workspace_id = $1 AND m.deleted_at IS NULL AND ts_match_vq(m.search, websearch_to_tsquery('english', $2))` +
			scope + ` AND ` + window
	case r.walk > 0:
		from = `(SELECT * FROM messages m WHERE m.workspace_id = $1 AND m.deleted_at IS NULL` + scope + ` AND ` + window + `
				ORDER BY m.created_at DESC, m.id DESC LIMIT ` + strconv.Itoa(r.walk) + `) m`
		where = `ts_match_vq(m.search, websearch_to_tsquery('english', $2))`
	case len(r.days) > 0:
		// Fenced (OFFSET 0) and without the order, so the planner reads the day index's entries
		// for the days and then their rows: given the order and the limit, it walks the newest
		// messages instead, through every row of a flood and every day a sparse word needs.
		// The words are checked on the row by ts_match_vq, which the planner cannot serve from
		// messages_search_idx: reading that index too would cost a common word's entries in
		// the whole history, the cost the days avoid.
		from = `(SELECT * FROM messages m WHERE m.workspace_id = $1 AND m.deleted_at IS NULL
				AND search_days(m.workspace_id, m.created_at, m.search) @@ search_days_query($1, ` + arg(r.days) + `::integer[], websearch_to_tsquery('english', $2))` +
			scope + ` AND ` + window + ` OFFSET 0) m`
		where = `ts_match_vq(m.search, websearch_to_tsquery('english', $2))`
	}
	// The candidates are ranked once chosen: a read by day sorts all of its days' matches
	// (1,500 of a common word in a day), and ranking each before the sort cost more than the
	// read (docs/performance.md, "Search by day").
	return `WITH s AS (
			SELECT c.id, c.workspace_id, c.channel_id, c.dm_id, c.parent_message_id, c.thread_root_id, c.channel_seq,
				c.thread_seq, c.created_at, c.edited_at, c.author_id, c.body,
				ts_rank(c.search, websearch_to_tsquery('english', $2)) AS rank
			FROM (SELECT m.id, m.workspace_id, m.channel_id, m.dm_id, m.parent_message_id, m.thread_root_id, m.channel_seq,
					m.thread_seq, m.created_at, m.edited_at, m.author_id, m.body, m.search
				FROM ` + from + `
				WHERE ` + where + `
				ORDER BY m.created_at DESC, m.id DESC LIMIT ` + candidates + `) c),
		page AS (SELECT s.* FROM s WHERE ` + keyset + ` ORDER BY ` + order + ` LIMIT $3)
		SELECT s.id, s.workspace_id, coalesce(s.channel_id, ''), coalesce(s.dm_id, ''),
			coalesce(s.parent_message_id, ''), s.thread_root_id, s.channel_seq, s.thread_seq, s.created_at,
			s.edited_at, s.rank, ts_headline('english', translate(s.body, $4, ''), websearch_to_tsquery('english', $2), $5),
			top.created_at, top.id, top.candidates, ` + userColumnsOf("u.") + `
		FROM page s JOIN users u ON u.id = s.author_id
			CROSS JOIN (SELECT created_at, id, (SELECT count(*) FROM s) AS candidates FROM s
				ORDER BY created_at DESC, id DESC LIMIT 1) top
		ORDER BY ` + order, args
}

// readablePlaces is the SQL condition that message alias m is in a place the actor may read,
// with $1 the workspace id and arg adding an argument: guests read only the guest channel,
// private channels only their members (the rules of ChannelForRead); direct conversations their
// members, and bot tokens only with dms:read (the rule of DMForRead).
func readablePlaces(m string, actor Actor, guest bool, arg func(any) string) string {
	var channels string
	if guest {
		channels = m + `.channel_id = (SELECT id FROM channels WHERE workspace_id = $1 AND name = ` + arg(GuestChannel) + `)`
	} else {
		channels = `(` + m + `.channel_id IS NOT NULL AND ` + m + `.channel_id NOT IN (` + channelsHidden("$1", arg(actor.UserID)) + `))`
	}
	if actor.IsBotToken() && !actor.HasScope(ScopeDMsRead) {
		return channels
	}
	return `(` + channels + ` OR ` + m + `.dm_id IN (SELECT dm_id FROM dm_members WHERE workspace_id = $1 AND user_id = ` +
		arg(actor.UserID) + `))`
}
