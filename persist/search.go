package persist

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Search limits.
const (
	// MaxSearchQueryLength bounds a search query, in characters.
	MaxSearchQueryLength = 500
	// DefaultSearchLimit and MaxSearchLimit bound a page of results.
	DefaultSearchLimit = 50
	MaxSearchLimit     = 100
)

// Search orders.
const (
	SearchSortRelevance = "relevance"
	SearchSortNewest    = "newest"
)

// SearchParams is one search request.
type SearchParams struct {
	WorkspaceID string
	Query       string
	// ChannelID or DMID narrows the search to one conversation; at most one is set.
	ChannelID string
	DMID      string
	Sort      string // SearchSortRelevance (default) or SearchSortNewest
	Limit     int    // 1..MaxSearchLimit; 0 means DefaultSearchLimit
	Cursor    string // next_cursor of the previous page of the same search
}

// SearchResult is one matching message with a plain-text snippet; each highlight is a
// [start, end) range of Unicode code points into the snippet.
type SearchResult struct {
	ID                   string      `json:"id"`
	WorkspaceID          string      `json:"workspace_id"`
	ChannelID            string      `json:"channel_id,omitempty"`
	DirectConversationID string      `json:"direct_conversation_id,omitempty"`
	ParentMessageID      string      `json:"parent_message_id,omitempty"`
	ThreadRootID         string      `json:"thread_root_id"`
	ChannelSeq           *int64      `json:"channel_seq,omitempty"`
	ThreadSeq            *int64      `json:"thread_seq,omitempty"`
	AuthorID             string      `json:"author_id"`
	Author               PublicUser  `json:"author"`
	CreatedAt            time.Time   `json:"created_at"`
	EditedAt             *time.Time  `json:"edited_at,omitempty"`
	Snippet              string      `json:"snippet"`
	Highlights           []Highlight `json:"highlights"`
	rank                 float32
}

// Highlight is a matched range of a snippet, in code points, end exclusive.
type Highlight struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// SearchPage is one page of results; NextCursor is nil on the last page.
type SearchPage struct {
	Results    []SearchResult `json:"results"`
	NextCursor *string        `json:"next_cursor"`
}

// searchCursor is the keyset position after the last result of a page, bound to the search
// that produced it by a fingerprint of the caller, workspace, query, scope and order.
type searchCursor struct {
	Bound string    `json:"b"`
	Rank  float32   `json:"r"`
	At    time.Time `json:"t"`
	ID    string    `json:"i"`
	// TopAt and TopID are the newest candidate of a relevance search's first page: later pages
	// rank the same candidates, however many messages arrive meanwhile.
	TopAt time.Time `json:"wt,omitzero"`
	TopID string    `json:"wi,omitempty"`
}

// Markers ts_headline puts around matches: private-use characters, removed from bodies first.
const (
	markStart = "\ue000"
	markStop  = "\ue001"
)

// RelevanceWindow is how many of the newest matches a relevance search ranks: the work of a
// search stays bounded however common its words are (docs/messages.md, "Search").
const RelevanceWindow = 200

// Search finds messages of a workspace matching a web-search style query (Postgres full text,
// English stemming), among those the actor may read: every channel for members, only the guest
// channel for guests, and the direct conversations the actor is in (for a bot token, only with
// dms:read). Deleted messages are never found. Codes: invalid_request (query, scope, limit, sort,
// cursor), not_found / forbidden / missing_scope (the workspace or the narrowing conversation).
func (tx *Tx) Search(ctx context.Context, actor Actor, p SearchParams) (SearchPage, error) {
	p, err := searchValidate(p)
	if err != nil {
		return SearchPage{}, err
	}
	member, err := tx.requireMemberToRead(ctx, p.WorkspaceID, actor)
	if err != nil {
		return SearchPage{}, err
	}
	if p.ChannelID != "" || p.DMID != "" {
		st, _, err := tx.placeFor(ctx, actor, Place{ChannelID: p.ChannelID, DMID: p.DMID}, accessRead)
		if err != nil {
			return SearchPage{}, err
		}
		if st.WorkspaceID != p.WorkspaceID {
			return SearchPage{}, NotFound("conversation")
		}
	}
	bound := searchFingerprint(actor.UserID, p)
	var after *searchCursor
	if p.Cursor != "" {
		c, err := decodeSearchCursor(p.Cursor, bound)
		if err != nil {
			return SearchPage{}, err
		}
		after = &c
	}
	// The newest candidates start at now (a first page), at the cursor (sort=newest) or at the
	// first page's newest match (relevance). A search first reads the last week before that,
	// then wider spans until it has its candidates: for a word that is neither common nor rare,
	// only the matches of a recent span are read from the table, not every match of the history.
	top, need := tx.now, RelevanceWindow
	if p.Sort == SearchSortNewest {
		need = p.Limit + 1
	}
	if after != nil {
		top = after.TopAt
		if p.Sort == SearchSortNewest {
			top = after.At
		}
	}
	// A small workspace is walked newest first in one statement, spans aside: the full-text
	// index holds every workspace's messages, so reading it for a word common elsewhere would
	// cost the other workspaces' matches, where the walk costs at most the workspace's own rows.
	// In a large one, a query whose matches are dense enough is walked too, over as many rows as
	// the index would cost (searchWalkBound): the full-text index would read every match of a
	// common word in the history, and its block range intersection (migration 0025) makes the
	// planner prefer it to the walk (docs/performance.md, "Search: bounded work per query").
	forced, isForced := ctx.Value(searchShapeKey{}).(searchForced)
	shape, budget := forced.shape, forced.budget
	if !isForced {
		if shape, budget, err = tx.searchShapeFor(ctx, p, need); err != nil {
			return SearchPage{}, err
		}
	}
	var found searchFound
	walked := false
	switch shape {
	case searchWalkAll:
		found, err = tx.searchRun(ctx, actor, member.Role == RoleGuest, p, after, time.Time{}, -1)
		walked = true
	case searchWalkSome:
		if budget == 0 {
			budget = searchWalkCap
		}
		found, err = tx.searchRun(ctx, actor, member.Role == RoleGuest, p, after, time.Time{}, budget)
		// A test that chose this shape without a budget reads what the walk found, on a
		// workspace too small to fill its candidates.
		walked = err == nil && (found.candidates >= need || forced == searchForced{shape: searchWalkSome})
	}
	var est *searchScopeEstimate
	for _, span := range searchSpans {
		if walked || err != nil {
			break
		}
		var since time.Time
		if span > 0 {
			since = top.Add(-span)
			// A span expected to hold fewer than the candidates is not read (searchSpanShort):
			// the next, wider one holds the same newest matches and more, so the results are
			// the same and a rare word costs one statement instead of two (the estimates
			// only save work; a span they misjudge is read as before).
			if shape != searchIndexEverySpan {
				if est == nil {
					if est, err = tx.searchScope(ctx, p); err != nil {
						break
					}
				}
				var few bool
				if few, err = tx.searchSpanShort(ctx, p, est, top, since, need); err != nil {
					break
				} else if few {
					continue
				}
			}
		}
		if found, err = tx.searchRun(ctx, actor, member.Role == RoleGuest, p, after, since, 0); err != nil || found.candidates >= need {
			break
		}
	}
	if err != nil {
		return SearchPage{}, err
	}
	out := SearchPage{Results: found.results}
	if len(out.Results) > p.Limit {
		out.Results = out.Results[:p.Limit]
		last := out.Results[p.Limit-1]
		c := searchCursor{Bound: bound, Rank: last.rank, At: last.CreatedAt, ID: last.ID, TopAt: found.topAt, TopID: found.topID}
		if after != nil {
			c.TopAt, c.TopID = after.TopAt, after.TopID
		}
		next := encodeSearchCursor(c)
		out.NextCursor = &next
	}
	return out, nil
}

// searchSpans are the spans of history a search reads in turn, newest first, until one holds
// its candidates; 0 is the whole history.
var searchSpans = []time.Duration{7 * 24 * time.Hour, 30 * 24 * time.Hour, 180 * 24 * time.Hour, 0}

// searchFound is one run of a search's statement: its page (one more than the limit when
// there is another), how many candidates it read, and the newest of them.
type searchFound struct {
	results    []SearchResult
	candidates int
	topAt      time.Time
	topID      string
}

// searchWalkRoots is the size, in root messages, up to which a search of the whole history walks
// the workspace's messages newest first rather than reading the full-text index.
const searchWalkRoots = 20000

// searchSmallWorkspace reports whether a workspace has at most searchWalkRoots root messages (its
// places' counters, summed), and the messages table's rows as the planner knows them. The
// full-text index holds every workspace's messages: a word common in the others makes reading
// it cost their matches too, while walking a small workspace's whole history costs at most its
// own rows.
func (tx *Tx) searchSmallWorkspace(ctx context.Context, workspaceID string) (bool, float64, error) {
	var roots int64
	var total float64
	err := tx.queryRow(ctx, `SELECT (SELECT coalesce(sum(last_seq), 0) FROM channels WHERE workspace_id = $1)
		+ (SELECT coalesce(sum(last_seq), 0) FROM dms WHERE workspace_id = $1),
		(SELECT reltuples FROM pg_class WHERE oid = 'messages'::regclass)`, workspaceID).Scan(&roots, &total)
	return roots <= searchWalkRoots, total, err
}

// searchShape is how a search reads: see Search.
type searchShape int

const (
	searchIndex          searchShape = iota // the full-text index, by spans of time
	searchWalkAll                           // the newest messages, until the candidates are found
	searchWalkSome                          // the same, over a bounded number of rows, then the index
	searchIndexEverySpan                    // searchIndex reading every span, estimates aside (tests)
)

// searchShapeKey is a context key by which tests choose a search's shape (a searchForced), so
// that each shape is held to the same visibility rules and results (export_test.go).
type searchShapeKey struct{}

// searchForced is a shape a test chose; for searchWalkSome, budget is the rows walked before
// the index is read, and 0 walks searchWalkCap rows and keeps what they hold.
type searchForced struct {
	shape  searchShape
	budget int
}

// searchShapeFor chooses how a search reads (see Search), and for searchWalkSome how many rows.
func (tx *Tx) searchShapeFor(ctx context.Context, p SearchParams, need int) (searchShape, int, error) {
	small, total, err := tx.searchSmallWorkspace(ctx, p.WorkspaceID)
	if err != nil || small {
		return searchWalkAll, 0, err
	}
	matches, err := tx.searchEstimate(ctx, `SELECT 1 FROM messages m WHERE m.search @@ websearch_to_tsquery('english', $1::text)`, p.Query)
	if budget := searchWalkBound(need, total, matches); budget > 0 {
		return searchWalkSome, budget, err
	}
	return searchIndex, 0, err
}

// searchWalkCap is the most rows a search of a large workspace walks newest first before it
// reads the full-text index.
const searchWalkCap = 50000

// searchWalkBound is how many of the newest rows a search walks for need matches before it
// reads the full-text index, or 0 to read the index at once; total is the table's rows and
// matches the planner's estimate of the query's matches among them (the full-text statistics
// of ANALYZE, per word and across the query's operators).
//
// The index costs at least an entry for each match of the query in the whole table, wherever
// in time it lies and whichever workspace holds it, and then the rows of the span's matches; a
// walk costs a row for each message it passes, and at 1,000,000 messages an estimated match
// read through the index cost about three walked rows (docs/performance.md, "Search under a
// flood"). So a query walks when the rows its density predicts (need ÷ its share of the table)
// are at most half of its matches, and it carries on, past what the density predicts, for twice
// as many rows as its matches (at most searchWalkCap): where this workspace's newest messages
// hold fewer matches than the table's share (a bot's flood on top of its history), the walk
// crosses them instead of reading a common word's entries across the history, and a walk that
// still falls short has cost less than the index it then reads.
func searchWalkBound(need int, total, matches float64) int {
	if total <= 0 || matches <= 0 {
		return 0
	}
	if predicted := float64(need) * total / matches; 2*predicted > min(matches, searchWalkCap) {
		return 0
	}
	return int(min(2*matches, searchWalkCap))
}

// searchEstimate is the planner's estimate of the rows of a statement, one EXPLAIN away (about
// 0.3 ms).
func (tx *Tx) searchEstimate(ctx context.Context, sql string, args ...any) (float64, error) {
	var plan []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	var raw []byte
	if err := tx.queryRow(ctx, `EXPLAIN (FORMAT JSON) `+sql, args...).Scan(&raw); err != nil {
		return 0, err
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		return 0, err
	}
	return plan[0].Plan.Rows, nil
}

// searchScopeEstimate is what a search's spans are estimated from: the planner's estimate of
// the query's matches in its scope over all history, and the scope's oldest live message.
type searchScopeEstimate struct {
	matches float64
	oldest  time.Time
}

// searchScopeFilter is the SQL condition of a search's workspace or narrowing conversation
// (message alias m) with the arguments after args.
func searchScopeFilter(p SearchParams, args []any) (string, []any) {
	switch {
	case p.ChannelID != "":
		return ` AND m.channel_id = $` + strconv.Itoa(len(args)+1), append(args, p.ChannelID)
	case p.DMID != "":
		return ` AND m.dm_id = $` + strconv.Itoa(len(args)+1), append(args, p.DMID)
	}
	return ``, args
}

// searchScope reads a search's searchScopeEstimate: one EXPLAIN, and one descent of the newest
// index of the workspace or channel (a conversation's history is taken as its workspace's).
func (tx *Tx) searchScope(ctx context.Context, p SearchParams) (*searchScopeEstimate, error) {
	scope, args := searchScopeFilter(p, []any{p.WorkspaceID, p.Query})
	matches, err := tx.searchEstimate(ctx, `SELECT 1 FROM messages m WHERE m.workspace_id = $1
		AND m.search @@ websearch_to_tsquery('english', $2::text)`+scope, args...)
	if err != nil {
		return nil, err
	}
	oldest := `SELECT min(created_at) FROM messages WHERE workspace_id = $1 AND deleted_at IS NULL`
	arg := p.WorkspaceID
	if p.ChannelID != "" {
		oldest, arg = `SELECT min(created_at) FROM messages WHERE channel_id = $1 AND deleted_at IS NULL`, p.ChannelID
	}
	var at *time.Time
	if err := tx.queryRow(ctx, oldest, arg).Scan(&at); err != nil {
		return nil, err
	}
	e := &searchScopeEstimate{matches: matches}
	if at != nil {
		e.oldest = *at
	}
	return e, nil
}

// searchSpanShort reports whether a search is expected to find fewer than need matches in its
// scope between since and top, by either of two estimates. The planner's (scope, span and
// words together, one EXPLAIN away) is the span's rows times the words' share of the whole
// table: rows that hold none of its words (a bot's flood) raise it as much as any. The span's
// share of the scope's matches by time (est.matches over the history from est.oldest to top)
// is the rate at which the words were written, which such rows leave alone. Taking the lower
// errs towards reading a wider span than needed, which costs the rows of its extra matches;
// the other way errs towards a statement read for nothing, which costs the whole statement
// again (docs/performance.md).
func (tx *Tx) searchSpanShort(ctx context.Context, p SearchParams, est *searchScopeEstimate, top, since time.Time, need int) (bool, error) {
	if searchSpanShortByTime(est.matches, est.oldest, top, since, need) {
		return true, nil
	}
	scope, args := searchScopeFilter(p, []any{p.WorkspaceID, since, p.Query})
	rows, err := tx.searchEstimate(ctx, `SELECT 1 FROM messages m WHERE m.workspace_id = $1
		AND m.created_at >= $2 AND m.search @@ websearch_to_tsquery('english', $3::text)`+scope, args...)
	return rows < float64(need), err
}

// searchSpanShortByTime reports whether matches spread evenly over the time from oldest to top
// put fewer than need of them after since.
func searchSpanShortByTime(matches float64, oldest, top, since time.Time, need int) bool {
	history := top.Sub(oldest)
	if oldest.IsZero() || history <= 0 || !since.After(oldest) {
		return false
	}
	return matches*float64(top.Sub(since))/float64(history) < float64(need)
}

// searchRun runs one statement of a search: walk < 0 walks the workspace's (or the place's)
// messages newest first until it has the candidates, walk > 0 does so over at most walk rows,
// and 0 reads the full-text index for the messages since since (zero: all).
func (tx *Tx) searchRun(ctx context.Context, actor Actor, guest bool, p SearchParams, after *searchCursor, since time.Time, walk int) (searchFound, error) {
	sql, args := searchStatement(actor, guest, p, after, since, walk)
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

// searchValidate checks and defaults search parameters. Codes: invalid_request.
func searchValidate(p SearchParams) (SearchParams, error) {
	p.Query = strings.TrimSpace(p.Query)
	switch {
	case p.WorkspaceID == "":
		return p, Invalid("workspace_id is required")
	case p.Query == "":
		return p, Invalid("q must not be empty")
	case utf8.RuneCountInString(p.Query) > MaxSearchQueryLength || strings.ContainsRune(p.Query, 0):
		return p, Invalid("q must be at most %d characters", MaxSearchQueryLength)
	case p.ChannelID != "" && p.DMID != "":
		return p, Invalid("give channel_id or direct_conversation_id, not both")
	case p.Limit < 0:
		return p, Invalid("limit must be 1 to %d", MaxSearchLimit)
	}
	// One rule for every list: a limit above the maximum is the maximum.
	p.Limit = min(p.Limit, MaxSearchLimit)
	if p.Limit == 0 {
		p.Limit = DefaultSearchLimit
	}
	switch p.Sort {
	case "":
		p.Sort = SearchSortRelevance
	case SearchSortRelevance, SearchSortNewest:
	default:
		return p, Invalid("sort must be relevance or newest")
	}
	return p, nil
}

// searchFingerprint binds a cursor to the caller and the search it continues.
func searchFingerprint(userID string, p SearchParams) string {
	h := sha256.New()
	for _, part := range []string{userID, p.WorkspaceID, p.Query, p.ChannelID, p.DMID, p.Sort} {
		h.Write([]byte(strconv.Quote(part)))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func encodeSearchCursor(c searchCursor) string {
	raw, _ := json.Marshal(c) // a struct of plain fields always marshals
	return base64.RawURLEncoding.EncodeToString(raw)
}

// decodeSearchCursor reads a cursor and checks it belongs to this search. Codes: invalid_request.
func decodeSearchCursor(s, bound string) (searchCursor, error) {
	var c searchCursor
	raw, err := base64.RawURLEncoding.DecodeString(s)
	// The id goes back to Postgres: it must be text Postgres can hold (a forged cursor may carry
	// an escaped NUL or invalid UTF-8).
	if err != nil || json.Unmarshal(raw, &c) != nil || c.Bound != bound || c.ID == "" || !utf8.ValidString(c.ID) ||
		strings.IndexByte(c.ID, 0) >= 0 {
		return searchCursor{}, Invalid("cursor does not belong to this search; start again without it")
	}
	if c.TopID != "" && (!utf8.ValidString(c.TopID) || strings.IndexByte(c.TopID, 0) >= 0) {
		return searchCursor{}, Invalid("cursor does not belong to this search; start again without it")
	}
	return c, nil
}

// highlightRanges strips the match markers from a headline and returns the plain snippet with
// the code-point ranges the markers enclosed.
func highlightRanges(headline string) (string, []Highlight) {
	var b strings.Builder
	hs := []Highlight{}
	n, start := 0, -1
	for _, r := range headline {
		switch string(r) {
		case markStart:
			start = n
		case markStop:
			if start >= 0 && n > start {
				hs = append(hs, Highlight{Start: start, End: n})
			}
			start = -1
		default:
			b.WriteRune(r)
			n++
		}
	}
	return b.String(), hs
}

// searchStatement is the statement of a search page and its arguments. Both orders read the
// matches newest first and stop early: sort=newest at the page (after the cursor), relevance at
// the RelevanceWindow newest matches (below the first page's newest), which it then ranks.
// Guests read only the guest channel, and private channels only their members (the rules of
// ChannelForRead); direct conversations are read by their members, and by bot tokens only with dms:read (the rule of DMForRead); a
// narrowed search was checked by the place's own read guard.
func searchStatement(actor Actor, guest bool, p SearchParams, after *searchCursor, since time.Time, walk int) (string, []any) {
	args := []any{p.WorkspaceID, p.Query, p.Limit + 1, markStart + markStop,
		`StartSel="` + markStart + `", StopSel="` + markStop + `", MaxWords=35, MinWords=15, ShortWord=2`}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	var scope string
	switch {
	case p.ChannelID != "":
		scope = `m.channel_id = ` + arg(p.ChannelID)
	case p.DMID != "":
		scope = `m.dm_id = ` + arg(p.DMID)
	default:
		scope = readablePlaces("m", actor, guest, arg)
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
	if !since.IsZero() {
		window += ` AND m.created_at >= ` + arg(since)
	}
	// ts_match_vq is what @@ calls; written as a function the planner cannot serve it from the
	// full-text index, so the statement walks the newest messages (see searchSmallWorkspace).
	from := `messages m`
	where := `m.workspace_id = $1 AND m.deleted_at IS NULL AND m.search @@ websearch_to_tsquery('english', $2)
				AND ` + scope + ` AND ` + window
	switch {
	case walk < 0:
		where = `m.workspace_id = $1 AND m.deleted_at IS NULL AND ts_match_vq(m.search, websearch_to_tsquery('english', $2))
				AND ` + scope + ` AND ` + window
	case walk > 0:
		from = `(SELECT * FROM messages m WHERE m.workspace_id = $1 AND m.deleted_at IS NULL AND ` + scope + ` AND ` + window + `
				ORDER BY m.created_at DESC, m.id DESC LIMIT ` + strconv.Itoa(walk) + `) m`
		where = `ts_match_vq(m.search, websearch_to_tsquery('english', $2))`
	}
	return `WITH s AS (
			SELECT m.id, m.workspace_id, m.channel_id, m.dm_id, m.parent_message_id, m.thread_root_id, m.channel_seq,
				m.thread_seq, m.created_at, m.edited_at, m.author_id, m.body,
				ts_rank(m.search, websearch_to_tsquery('english', $2)) AS rank
			FROM ` + from + `
			WHERE ` + where + `
			ORDER BY m.created_at DESC, m.id DESC LIMIT ` + candidates + `),
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
