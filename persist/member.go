package persist

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Member is a user's place in a workspace.
type Member struct {
	WorkspaceID    string     `json:"workspace_id"`
	UserID         string     `json:"user_id"`
	Role           string     `json:"role"`
	JoinedAt       time.Time  `json:"joined_at"`
	TimeoutUntil   *time.Time `json:"timeout_until,omitempty"`
	BlockedAt      *time.Time `json:"blocked_at,omitempty"`
	ModerationNote string     `json:"moderation_note,omitempty"`
	ModerationBy   string     `json:"moderation_by,omitempty"`
	ModerationAt   *time.Time `json:"moderation_at,omitempty"`
	// owner is a user bot's owner's membership when the store's guard read the bot's for a user
	// bot token: the bot shares every restriction of it (see boundByOwner). nil otherwise.
	owner *Member
	// ownerWho names owner in refusals: the bot's owner, or its token's issuer.
	ownerWho string
}

// memberColumnsOf lists the columns scanMember reads, qualified by a table alias such as "m.".
func memberColumnsOf(a string) string {
	return fmt.Sprintf(`%[1]sworkspace_id, %[1]suser_id, %[1]srole, %[1]sjoined_at, %[1]stimeout_until,
	%[1]sblocked_at, coalesce(%[1]smoderation_note, ''), coalesce(%[1]smoderation_by, ''), %[1]smoderation_at`, a)
}

var memberColumns = memberColumnsOf("")

func memberDest(m *Member) []any {
	return []any{&m.WorkspaceID, &m.UserID, &m.Role, &m.JoinedAt, &m.TimeoutUntil, &m.BlockedAt,
		&m.ModerationNote, &m.ModerationBy, &m.ModerationAt}
}

func scanMember(row pgx.Row) (Member, error) {
	var m Member
	err := row.Scan(memberDest(&m)...)
	return m, err
}

// MemberAdd adds a user to a workspace with a role; an existing member keeps their role. It
// applies no admission rule (callers that let people in use MemberJoin), but a block or timeout
// the user had when removed comes back.
// Codes: invalid_request (unknown role), not_found (user or workspace).
func (tx *Tx) MemberAdd(ctx context.Context, workspaceID, userID, role string) (Member, error) {
	switch role {
	case RoleOwner, RoleModerator, RoleMember, RoleGuest, RoleBot:
	default:
		return Member{}, Invalid("role must be owner, moderator, member, guest or bot")
	}
	// A block or timeout kept when the user was removed (keepStanding) comes back with them.
	tag, err := tx.exec(ctx, `INSERT INTO workspace_members (workspace_id, user_id, role, joined_at,
			blocked_at, timeout_until, moderation_note, moderation_by, moderation_at)
		SELECT $1, u.id, $3, $4, k.blocked_at, k.timeout_until, k.moderation_note, k.moderation_by, k.moderation_at
		FROM users u LEFT JOIN workspace_standing_kept k ON k.workspace_id = $1 AND k.user_id = u.id
		WHERE u.id = $2 AND u.deleted_at IS NULL
		ON CONFLICT (workspace_id, user_id) DO NOTHING`, workspaceID, userID, role, tx.now)
	if err != nil {
		return Member{}, err
	}
	if tag.RowsAffected() > 0 {
		if _, err := tx.exec(ctx, `DELETE FROM workspace_standing_kept WHERE workspace_id = $1 AND user_id = $2`,
			workspaceID, userID); err != nil {
			return Member{}, err
		}
	}
	return tx.MemberGet(ctx, workspaceID, userID)
}

// MemberGet returns a membership. Codes: not_found.
func (tx *Tx) MemberGet(ctx context.Context, workspaceID, userID string) (Member, error) {
	m, err := scanMember(tx.queryRow(ctx, `SELECT `+memberColumns+` FROM workspace_members
		WHERE workspace_id = $1 AND user_id = $2`, workspaceID, userID))
	return m, notFoundAs(err, "member")
}

// MemberJoin lets a person into a workspace as a member, moderator or guest: the way in of the
// operator command and of invites. An existing member keeps their role and is returned as is. A
// new guest finds the guest channel ready (created, with channel.created, when missing), so
// this is the last write of the caller's transaction.
// Codes: invalid_request (role, a bot, a non-human moderator), not_found (user).
func (tx *Tx) MemberJoin(ctx context.Context, workspaceID, userID, role string) (Member, error) {
	if role == "" {
		role = RoleMember
	}
	if role != RoleMember && role != RoleModerator && role != RoleGuest {
		return Member{}, Invalid("role must be member, moderator or guest")
	}
	u, err := tx.UserGet(ctx, userID)
	if err != nil {
		return Member{}, err
	}
	if u.DeletedAt != nil {
		return Member{}, NotFound("user")
	}
	if u.Kind != KindHuman {
		return Member{}, Invalid("bots join a workspace through the bots API")
	}
	if existing, err := tx.MemberGet(ctx, workspaceID, userID); err == nil {
		return existing, nil
	} else if e, ok := ErrorOf(err); !ok || e.Code != CodeNotFound {
		return Member{}, err
	}
	m, err := tx.MemberAdd(ctx, workspaceID, userID, role)
	if err != nil {
		return Member{}, err
	}
	if m.Role == RoleGuest {
		if _, err := tx.guestChannelEnsure(ctx, workspaceID, userID); err != nil {
			return Member{}, err
		}
	}
	return m, nil
}

// MemberEntry is a membership with its user, as listings and moderation read it.
type MemberEntry struct {
	Member
	User User
	// PostsUsed is how many of today's (UTC) guest posts the member has made.
	PostsUsed int
}

// DirectoryMember is an entry of the member directory: profile and role, no moderation state.
type DirectoryMember struct {
	WorkspaceID string     `json:"workspace_id"`
	User        PublicUser `json:"user"`
	Role        string     `json:"role"`
	JoinedAt    time.Time  `json:"joined_at"`
}

// Directory is the entry's directory shape.
func (e MemberEntry) Directory() DirectoryMember {
	return DirectoryMember{WorkspaceID: e.WorkspaceID, User: e.User.Public(), Role: e.Role, JoinedAt: e.JoinedAt}
}

// memberEntryQuery selects MemberEntry rows of workspace $1 matching where; the guest budget is
// read for the date in parameter dayParam.
func memberEntryQuery(dayParam int, where string) string {
	return `SELECT ` + memberColumnsOf("m.") + `, m.join_seq, coalesce(g.used, 0), ` + userColumnsOf("u.") + `
		FROM workspace_members m JOIN users u ON u.id = m.user_id
		LEFT JOIN guest_post_counts g ON g.workspace_id = m.workspace_id AND g.user_id = m.user_id
			AND g.day = $` + strconv.Itoa(dayParam) + `::date
		WHERE m.workspace_id = $1 AND ` + where
}

func scanMemberEntry(row pgx.Row, more ...any) (MemberEntry, int64, error) {
	var e MemberEntry
	var seq int64
	dest := append(memberDest(&e.Member), &seq, &e.PostsUsed)
	err := row.Scan(append(append(dest, userDest(&e.User)...), more...)...)
	return e, seq, err
}

// memberEntry reads a membership with its user. Codes: not_found.
func (tx *Tx) memberEntry(ctx context.Context, workspaceID, userID string) (MemberEntry, error) {
	e, _, err := scanMemberEntry(tx.queryRow(ctx, memberEntryQuery(2, `m.user_id = $3`), workspaceID, tx.today(), userID))
	return e, notFoundAs(err, "member")
}

// memberForUpdate is memberEntry holding the membership's row lock to the end of the
// transaction. Codes: not_found.
func (tx *Tx) memberForUpdate(ctx context.Context, workspaceID, userID string) (MemberEntry, error) {
	e, _, err := scanMemberEntry(tx.queryRow(ctx, memberEntryQuery(2, `m.user_id = $3 FOR UPDATE OF m`),
		workspaceID, tx.today(), userID))
	return e, notFoundAs(err, "member")
}

// memberSetRole changes a role and records who changed it.
func (tx *Tx) memberSetRole(ctx context.Context, workspaceID, userID, role, byUserID string) error {
	_, err := tx.exec(ctx, `UPDATE workspace_members SET role = $3, moderation_by = $4, moderation_at = $5
		WHERE workspace_id = $1 AND user_id = $2`, workspaceID, userID, role, byUserID, tx.now)
	tx.noteMembershipChanged(workspaceID, userID)
	return err
}

// today is the transaction's UTC date, the key of the guest budget.
func (tx *Reader) today() string { return tx.now.UTC().Format(time.DateOnly) }

// Member directory page sizes.
const (
	MemberPageDefault = 100
	MemberPageMax     = 200
)

// MemberListParams filter and page the member directory.
type MemberListParams struct {
	// Limit is the page size: 0 means MemberPageDefault; above MemberPageMax means the maximum.
	Limit int
	// Cursor is a previous page's NextCursor; "" is the first page.
	Cursor string
	// Query matches display names and handles, case-insensitively and literally (% _ \ are
	// ordinary characters); a leading @ is ignored for handles.
	Query string
	// Role keeps one role; "" keeps all.
	Role string
	// channelID keeps the members of one channel; "" keeps all. channelPublic says it is a
	// public one, whose members are everyone but guests and those who left it.
	channelID     string
	channelPublic bool
}

// MemberPage is one page of a member listing, in join order. TotalCount, the number of members
// matching the filters, is set on the first page only.
type MemberPage[T any] struct {
	Members    []T    `json:"members"`
	NextCursor string `json:"next_cursor,omitempty"`
	HasMore    bool   `json:"has_more"`
	TotalCount *int   `json:"total_count,omitempty"`
}

// MemberList returns a page of the member directory. Any member may read it.
// Codes: invalid_request (limit, cursor, role), not_found, forbidden.
func (tx *Reader) MemberList(ctx context.Context, actor Actor, workspaceID string, p MemberListParams) (MemberPage[DirectoryMember], error) {
	if _, err := tx.requireMemberToRead(ctx, workspaceID, actor); err != nil {
		return MemberPage[DirectoryMember]{}, err
	}
	page, err := tx.memberPage(ctx, workspaceID, p)
	return mapMembers(page, MemberEntry.Directory), err
}

// MemberDirectoryGet returns one entry of the member directory (a profile card). Any member
// may read it. Codes: not_found (workspace, or no such member), forbidden.
func (tx *Tx) MemberDirectoryGet(ctx context.Context, actor Actor, workspaceID, userID string) (DirectoryMember, error) {
	if _, err := tx.requireMemberToRead(ctx, workspaceID, actor); err != nil {
		return DirectoryMember{}, err
	}
	e, err := tx.memberEntry(ctx, workspaceID, userID)
	return e.Directory(), err
}

// mapMembers renders a page of entries in another shape.
func mapMembers[T any](p MemberPage[MemberEntry], view func(MemberEntry) T) MemberPage[T] {
	out := MemberPage[T]{Members: make([]T, len(p.Members)), NextCursor: p.NextCursor, HasMore: p.HasMore, TotalCount: p.TotalCount}
	for i, e := range p.Members {
		out.Members[i] = view(e)
	}
	return out
}

// memberPage reads one page of members in join order. join_seq is assigned at insert and never
// changes, so pages neither repeat nor skip members present when the listing began, however
// many join meanwhile.
func (tx *Reader) memberPage(ctx context.Context, workspaceID string, p MemberListParams) (MemberPage[MemberEntry], error) {
	page := MemberPage[MemberEntry]{Members: []MemberEntry{}}
	limit := p.Limit
	switch {
	case limit < 0:
		return page, Invalid("limit must be between 1 and %d", MemberPageMax)
	case limit == 0:
		limit = MemberPageDefault
	case limit > MemberPageMax:
		limit = MemberPageMax
	}
	after, err := parseMemberCursor(p.Cursor)
	if err != nil {
		return page, err
	}
	switch p.Role {
	case "", RoleOwner, RoleModerator, RoleMember, RoleGuest, RoleBot:
	default:
		return page, Invalid("role must be owner, moderator, member, bot or guest")
	}
	// Each filter is in the statement only when given: no "($n = '' OR …)" for the planner to
	// keep in a plan made for any value.
	args := []any{workspaceID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	role, countRole := "", ""
	if p.Role != "" {
		n := arg(p.Role)
		role, countRole = ` AND m.role = `+n, ` AND c.role = `+n
	}
	filter := `u.deleted_at IS NULL` + role
	// A statement run before is kept with its plan, made once for every name: one with a name
	// is planned for it (an unnamed statement), so the planner weighs the trigram indexes
	// (migration 0025) against walking the members in join order by how many names hold it.
	// The expressions are the indexes'; a string LIKE '%q%' (escaped) is strpos(string, q) > 0.
	mode := any(pgx.QueryExecModeCacheStatement)
	q := strings.TrimSpace(p.Query)
	if q != "" {
		filter += ` AND (lower(u.display_name) LIKE lower(` + arg(likeSubstring(q)) + `)
			OR coalesce(u.handle, '') LIKE lower(` + arg(likeSubstring(strings.TrimPrefix(q, "@"))) + `))`
		mode = pgx.QueryExecModeCacheDescribe
	}
	switch {
	case p.channelID != "" && p.channelPublic:
		filter += ` AND m.role <> 'guest' AND NOT EXISTS (SELECT 1 FROM channel_person_states ls
			WHERE ls.channel_id = ` + arg(p.channelID) + ` AND ls.user_id = m.user_id AND ls.left_at IS NOT NULL)`
	case p.channelID != "":
		filter += ` AND EXISTS (SELECT 1 FROM channel_members cm WHERE cm.channel_id = ` + arg(p.channelID) + `
			AND cm.user_id = m.user_id)`
	}
	filterArgs := slices.Clone(args)
	arg(tx.today())
	day := len(args)
	// The first page of a listing by name carries the count of every match, which reads them
	// all: the page is then taken from the same matches, in one statement (the matches once,
	// then their first limit+1 in join order), instead of walking the members in join order
	// for the page and finding every match again for the count (docs/performance.md). A name
	// of fewer than three characters has no trigram: every name is read and most hold it, so
	// the walk finds its page at once and only the count reads them all.
	counted := p.Cursor == "" && utf8.RuneCountInString(strings.TrimPrefix(q, "@")) >= 3
	// The first page of the whole directory (or of a role) reads its total from the counts the
	// triggers of migration 0034 keep, in the page's own statement, where it counted every
	// membership of the workspace each time.
	kept := p.Cursor == "" && q == "" && p.channelID == ""
	var sql string
	switch {
	case kept:
		sql = `SELECT e.*, (SELECT coalesce(sum(c.members), 0)::bigint FROM workspace_member_counts c
				WHERE c.workspace_id = $1` + countRole + `)
			FROM (` + memberEntryQuery(day, filter+` ORDER BY m.join_seq LIMIT `+arg(limit+1)) + `) e ORDER BY e.join_seq`
	case counted:
		// Each entry of the page is read by its keys (a lateral subquery the planner keeps
		// apart: OFFSET 0), where it would hash every user of the database to join a page.
		sql = `WITH hit AS MATERIALIZED (SELECT m.user_id, m.join_seq FROM workspace_members m JOIN users u ON u.id = m.user_id
				WHERE m.workspace_id = $1 AND ` + filter + `),
			page AS (SELECT user_id, join_seq FROM hit ORDER BY join_seq LIMIT ` + arg(limit+1) + `)
			SELECT e.*, (SELECT count(*) FROM hit) FROM page p
			CROSS JOIN LATERAL (` + memberEntryQuery(day, `m.user_id = p.user_id OFFSET 0`) + `) e
			ORDER BY p.join_seq`
	default:
		sql = memberEntryQuery(day, filter+` AND m.join_seq > `+arg(after)+` ORDER BY m.join_seq LIMIT `+arg(limit+1))
	}
	rows, err := tx.query(ctx, sql, append([]any{mode}, args...)...)
	if err != nil {
		return page, err
	}
	defer rows.Close()
	var last int64
	total := 0
	for rows.Next() {
		var more []any
		if counted || kept {
			more = []any{&total}
		}
		e, seq, err := scanMemberEntry(rows, more...)
		if err != nil {
			return page, err
		}
		if len(page.Members) == limit {
			page.HasMore = true
			break
		}
		page.Members, last = append(page.Members, e), seq
	}
	if err := rows.Err(); err != nil {
		return page, err
	}
	rows.Close()
	if page.HasMore {
		page.NextCursor = formatMemberCursor(last)
	}
	switch {
	case counted || kept:
		page.TotalCount = &total
	case p.Cursor == "":
		// With a short name or a channel, the count joins the matches.
		count := `SELECT count(*) FROM workspace_members m JOIN users u ON u.id = m.user_id
			WHERE m.workspace_id = $1 AND ` + filter
		if err := tx.queryRow(ctx, count, append([]any{mode}, filterArgs...)...).Scan(&total); err != nil {
			return page, err
		}
		page.TotalCount = &total
	}
	return page, nil
}

// likeSubstring is the LIKE pattern of the strings holding s: "%s%", with LIKE's own characters
// in s escaped, so they match themselves (the directory's names are matched literally).
func likeSubstring(s string) string {
	return "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(s) + "%"
}

// Member cursors are opaque to clients: the last join_seq of a page, encoded.
func formatMemberCursor(seq int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("m" + strconv.FormatInt(seq, 10)))
}

func parseMemberCursor(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil && len(raw) > 1 && raw[0] == 'm' {
		if seq, err := strconv.ParseInt(string(raw[1:]), 10, 64); err == nil && seq > 0 {
			return seq, nil
		}
	}
	return 0, Invalid("cursor is not one this server issued")
}
