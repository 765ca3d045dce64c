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
	// first page's newest match (relevance). A search reads the days before that its words'
	// rate needs (searchByDays), then wider spans until it has its candidates: for a word that
	// is neither common nor rare, only the matches of recent days are read from the table, not
	// every match of the history.
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
	// In a large one, a query whose matches are dense enough is walked too, over twice the rows
	// its density predicts (searchWalkBound): the full-text index would read every match of a
	// common word in the history, and its block range intersection (migration 0025) makes the
	// planner prefer it to the walk (docs/performance.md, "Search: bounded work per query").
	forced, isForced := ctx.Value(searchShapeKey{}).(searchForced)
	shape, budget := forced.shape, forced.budget
	if !isForced {
		if shape, budget, err = tx.searchShapeFor(ctx, p, need); err != nil {
			return SearchPage{}, err
		}
	}
	// A dense query whose first days by day hold fewer rows than the walk would read skips the
	// walk (searchWalkFirst): two common words together are dense enough to walk thousands of
	// rows and sparse enough to find their candidates in a few days' entries.
	var est *searchScopeEstimate
	if shape == searchWalkSome && !isForced {
		if est, err = tx.searchScope(ctx, p); err != nil {
			return SearchPage{}, err
		}
		if !searchWalkFirst(budget, est, top, need) {
			shape = searchByDays
		}
	}
	guest := member.Role == RoleGuest
	var found searchFound
	done := false
	switch shape {
	case searchWalkAll:
		found, err = tx.searchRun(ctx, actor, guest, p, after, searchRead{walk: -1})
		done = true
	case searchWalkSome:
		if budget == 0 {
			budget = searchWalkCap
		}
		found, err = tx.searchRun(ctx, actor, guest, p, after, searchRead{walk: budget})
		// A test that chose this shape without a budget reads what the walk found, on a
		// workspace too small to fill its candidates.
		done = err == nil && (found.candidates >= need || forced == searchForced{shape: searchWalkSome})
	}
	// A walk that fell short (a flood of messages without the words on top) and a query too
	// sparse to walk read the day index (searchByDays), for as many days as the words' rate
	// needs; short of the candidates there, the full-text index by spans, past the days read.
	var read time.Duration
	if !done && err == nil && (shape == searchWalkSome || shape == searchByDays) {
		if est == nil {
			est, err = tx.searchScope(ctx, p)
		}
		if err == nil && est.indexable {
			first := forced.days
			if first == 0 {
				first = searchDaysFirst(est.matches, est.oldest, top, need)
			}
			// A dense query whose first days are crowded with its matches walks on instead,
			// through a flood if there is one, then reads the spans (searchDaysCrowded).
			crowded := false
			if shape == searchWalkSome && !isForced && first > 0 {
				crowded, err = tx.searchDaysCrowded(ctx, p, searchDayList(top.Add(-first), top))
			}
			switch {
			case err != nil:
			case crowded:
				found, err = tx.searchRun(ctx, actor, guest, p, after, searchRead{walk: searchWalkCap})
				done = err == nil && found.candidates >= need
			default:
				found, done, read, err = tx.searchByDays(ctx, actor, guest, p, after, top, need, first)
			}
		}
	}
	for _, span := range searchSpans {
		if done || err != nil {
			break
		}
		var since time.Time
		if span > 0 {
			if span <= read {
				continue
			}
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
		if found, err = tx.searchRun(ctx, actor, guest, p, after, searchRead{since: since}); err != nil || found.candidates >= need {
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
