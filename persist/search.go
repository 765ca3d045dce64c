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
}

// Markers ts_headline puts around matches: private-use characters, removed from bodies first.
const (
	markStart = "\ue000"
	markStop  = "\ue001"
)

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
	// Guests read only the guest channel and private channels only their members (the rules of
	// ChannelForRead); DMs are read by their members, and by bot tokens only with dms:read (the
	// rule of DMForRead).
	args := []any{p.WorkspaceID, p.Query, actor.UserID, p.ChannelID, p.DMID, p.Limit + 1,
		member.Role == RoleGuest, !actor.IsBotToken() || actor.HasScope(ScopeDMsRead), GuestChannel,
		markStart + markStop, `StartSel="` + markStart + `", StopSel="` + markStop + `", MaxWords=35, MinWords=15, ShortWord=2`}
	order, keyset := `s.rank DESC, s.created_at DESC, s.id DESC`, "true"
	if p.Sort == SearchSortNewest {
		order = `s.created_at DESC, s.id DESC`
	}
	if after != nil && p.Sort == SearchSortNewest {
		keyset, args = `(s.created_at, s.id) < ($12, $13)`, append(args, after.At, after.ID)
	} else if after != nil {
		keyset, args = `(s.rank, s.created_at, s.id) < ($12::real, $13, $14)`, append(args, after.Rank, after.At, after.ID)
	}
	rows, err := tx.query(ctx, `WITH q AS (SELECT websearch_to_tsquery('english', $2) AS query),
		s AS (
			SELECT m.*, ts_rank(m.search, q.query) AS rank FROM messages m, q
			WHERE m.workspace_id = $1 AND m.search @@ q.query AND m.deleted_at IS NULL
				AND ((m.channel_id IS NOT NULL AND $5 = '' AND ($4 = '' OR m.channel_id = $4)
						AND (NOT $7 OR m.channel_id IN (SELECT id FROM channels WHERE workspace_id = $1 AND name = $9))
						AND NOT `+channelHidden("m.channel_id", "$3")+`)
					OR (m.dm_id IS NOT NULL AND $4 = '' AND ($5 = '' OR m.dm_id = $5) AND $8
						AND m.dm_id IN (SELECT dm_id FROM dm_members WHERE workspace_id = $1 AND user_id = $3)))),
		page AS (SELECT s.* FROM s WHERE `+keyset+` ORDER BY `+order+` LIMIT $6)
		SELECT s.id, s.workspace_id, coalesce(s.channel_id, ''), coalesce(s.dm_id, ''),
			coalesce(s.parent_message_id, ''), s.thread_root_id, s.channel_seq, s.thread_seq, s.created_at,
			s.edited_at, s.rank,
			ts_headline('english', translate(s.body, $10, ''), q.query, $11), `+userColumnsOf("u.")+`
		FROM page s CROSS JOIN q JOIN users u ON u.id = s.author_id
		ORDER BY `+order, args...)
	if err != nil {
		return SearchPage{}, err
	}
	defer rows.Close()
	out := SearchPage{Results: []SearchResult{}}
	for rows.Next() {
		var r SearchResult
		var u User
		var headline string
		dest := []any{&r.ID, &r.WorkspaceID, &r.ChannelID, &r.DirectConversationID, &r.ParentMessageID,
			&r.ThreadRootID, &r.ChannelSeq, &r.ThreadSeq, &r.CreatedAt, &r.EditedAt, &r.rank, &headline}
		if err := rows.Scan(append(dest, userDest(&u)...)...); err != nil {
			return SearchPage{}, err
		}
		r.AuthorID, r.Author = u.ID, u.Public()
		r.Snippet, r.Highlights = highlightRanges(headline)
		out.Results = append(out.Results, r)
	}
	if err := rows.Err(); err != nil {
		return SearchPage{}, err
	}
	if len(out.Results) > p.Limit {
		out.Results = out.Results[:p.Limit]
		last := out.Results[p.Limit-1]
		next := encodeSearchCursor(searchCursor{Bound: bound, Rank: last.rank, At: last.CreatedAt, ID: last.ID})
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
