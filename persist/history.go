package persist

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// History record kinds (import_records.kind).
const (
	HistoryKindPerson       = "person"
	HistoryKindChannel      = "channel"
	HistoryKindConversation = "conversation"
	HistoryKindMessage      = "message"
	HistoryKindUpload       = "upload"
)

// MaxHistorySourceLength bounds a History source name, in bytes.
const MaxHistorySourceLength = 200

// History is an import into one workspace from one source; HistoryOpen makes one.
type History struct {
	WorkspaceID string
	Source      string
}

// Imported is what a History method wrote or found: ID is the Natter id. Created reports a new
// row; Matched an existing row of the workspace taken for the source's record (a person by
// email, a public channel by name, a conversation by its members). Both false: the source id
// was imported before and nothing was written.
type Imported struct {
	ID      string
	Created bool
	Matched bool
}

// HistoryOpen checks the workspace and source of an import. Codes: invalid_request (source),
// not_found (workspace).
func (tx *Tx) HistoryOpen(ctx context.Context, workspaceID, source string) (History, error) {
	if source == "" || len(source) > MaxHistorySourceLength || !utf8.ValidString(source) || strings.ContainsRune(source, 0) {
		return History{}, Invalid("source must be 1 to %d bytes of text", MaxHistorySourceLength)
	}
	if _, err := tx.WorkspaceGet(ctx, workspaceID); err != nil {
		return History{}, err
	}
	return History{WorkspaceID: workspaceID, Source: source}, nil
}

// HistoryLookup returns the Natter id the source record of kind became, ok false when it was
// never imported.
func (tx *Tx) HistoryLookup(ctx context.Context, h History, kind, sourceID string) (id string, ok bool, err error) {
	err = tx.queryRow(ctx, `SELECT target_id FROM import_records
		WHERE workspace_id = $1 AND source = $2 AND kind = $3 AND source_id = $4`,
		h.WorkspaceID, h.Source, kind, sourceID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return id, err == nil, err
}

// historyRecord keys a written row by its source id. A concurrent run that recorded the same
// source id first is a conflict (the caller's transaction is then rolled back whole).
func (tx *Tx) historyRecord(ctx context.Context, h History, kind, sourceID, targetID string) error {
	tag, err := tx.exec(ctx, `INSERT INTO import_records (workspace_id, source, kind, source_id, target_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, h.WorkspaceID, h.Source, kind, sourceID, targetID, tx.now)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return Conflict("%s %s of %s was imported by another run at the same time", kind, sourceID, h.Source)
	}
	return nil
}

// historyKnown is HistoryLookup for the start of a write: it also checks the source id.
func (tx *Tx) historyKnown(ctx context.Context, h History, kind, sourceID string) (string, bool, error) {
	if err := historySourceID(kind, sourceID); err != nil {
		return "", false, err
	}
	return tx.HistoryLookup(ctx, h, kind, sourceID)
}

// HistoryPersonParams is a person (or bot) of the source.
type HistoryPersonParams struct {
	SourceID string
	// Kind is KindHuman ("" too) or KindBot.
	Kind string
	// DisplayName is required; cut to MaxDisplayNameLength.
	DisplayName string
	// Handle is the wished handle: characters a handle cannot hold become _, and a handle taken
	// by someone else gets a numeric suffix. One that cannot be made valid is left out.
	Handle string
	// Email matches a human to a live account with that address; a person created keeps it
	// when it is a valid address. Bots never carry one.
	Email     string
	AvatarURL string // kept when it is an http(s) URL
	// Deactivated keeps the person only as the author of old messages: a deleted identity (no
	// handle, no email, the wished handle as former_handle) that is no member of the workspace.
	// A deactivated person whose email matches a live account is that account, whose membership
	// is left as it is (someone who left the source is not let in).
	Deactivated bool
	// Role is the membership of a live human: RoleMember ("" too), RoleModerator or RoleGuest.
	// Bots are members with RoleBot. A matched account who is already a member keeps their role.
	Role string
}

// HistoryPerson imports a person: matched by email to a live human account (which joins the
// workspace when not a member), otherwise created. Codes: invalid_request (source id, kind,
// role, display name).
func (tx *Tx) HistoryPerson(ctx context.Context, h History, p HistoryPersonParams) (Imported, error) {
	id, ok, err := tx.historyKnown(ctx, h, HistoryKindPerson, p.SourceID)
	if err != nil || ok {
		return Imported{ID: id}, err
	}
	if p.Kind == "" {
		p.Kind = KindHuman
	}
	role := p.Role
	switch {
	case p.Kind == KindBot:
		role = RoleBot
	case p.Kind != KindHuman:
		return Imported{}, Invalid("kind must be human or bot")
	case role == "":
		role = RoleMember
	case role != RoleMember && role != RoleModerator && role != RoleGuest:
		return Imported{}, Invalid("role must be member, moderator or guest")
	}
	name := strings.TrimSpace(p.DisplayName)
	if utf8.RuneCountInString(name) > MaxDisplayNameLength {
		name = string([]rune(name)[:MaxDisplayNameLength])
	}
	if name, err = NormalizeDisplayName(name); err != nil {
		return Imported{}, err
	}
	email := NormalizeEmail(p.Email)
	if p.Kind == KindBot || !validEmail(email) {
		email = ""
	}
	out := Imported{}
	if email != "" {
		if u, err := tx.UserGetByEmail(ctx, email); err == nil {
			out = Imported{ID: u.ID, Matched: true}
		} else if e, ok := ErrorOf(err); !ok || e.Code != CodeNotFound {
			return Imported{}, err
		}
	}
	if out.ID == "" {
		if out.ID, err = tx.historyUserInsert(ctx, p, name, email); err != nil {
			return Imported{}, err
		}
		out.Created = true
	}
	if !p.Deactivated {
		if _, err := tx.MemberAdd(ctx, h.WorkspaceID, out.ID, role); err != nil {
			return Imported{}, err
		}
	}
	return out, tx.historyRecord(ctx, h, HistoryKindPerson, p.SourceID, out.ID)
}

// historyUserInsert creates the user of an imported person, with the first free handle among the
// wished one and its numbered variants.
func (tx *Tx) historyUserInsert(ctx context.Context, p HistoryPersonParams, name, email string) (string, error) {
	handle, err := tx.historyFreeHandle(ctx, historyHandle(p.Handle))
	if err != nil {
		return "", err
	}
	avatar, err := NormalizeAvatarURL(p.AvatarURL)
	if err != nil {
		avatar = ""
	}
	var deletedAt *time.Time
	former := ""
	if p.Deactivated {
		deletedAt, former, handle, email = &tx.now, handle, "", ""
	}
	id := NewID(PrefixUser, tx.now)
	_, err = tx.exec(ctx, `INSERT INTO users (id, kind, display_name, handle, former_handle, email, avatar_url,
			created_at, updated_at, deleted_at)
		VALUES ($1, $2, $3, nullif($4, ''), nullif($5, ''), nullif($6, ''), nullif($7, ''), $8, $8, $9)`,
		id, p.Kind, name, handle, former, email, avatar, tx.now, deletedAt)
	return id, err
}

// historyHandle turns a wished handle into a valid one (or ""): lowercased, other characters
// as _, at most 32 characters.
func historyHandle(raw string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimPrefix(strings.TrimSpace(raw), "@")) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteRune('_')
		}
		if b.Len() == 32 {
			break
		}
	}
	if h, err := NormalizeHandle(b.String()); err == nil {
		return h
	}
	return ""
}

// historyFreeHandle returns handle, or handle-2 … handle-99 when taken, or "" when all are.
func (tx *Tx) historyFreeHandle(ctx context.Context, handle string) (string, error) {
	if handle == "" {
		return "", nil
	}
	candidates := []string{handle}
	for i := 2; i < 100; i++ {
		suffix := "-" + strconv.Itoa(i)
		candidates = append(candidates, handle[:min(len(handle), 32-len(suffix))]+suffix)
	}
	return tx.historyFirstFree(ctx, candidates, `SELECT handle FROM users WHERE handle = ANY($1)`)
}

// historyFirstFree returns the first of candidates that the query (listing those of $1 taken,
// with args as $2 …) does not list, or "" when all are taken.
func (tx *Tx) historyFirstFree(ctx context.Context, candidates []string, sql string, args ...any) (string, error) {
	rows, err := tx.query(ctx, sql, append([]any{candidates}, args...)...)
	if err != nil {
		return "", err
	}
	taken := map[string]bool{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return "", err
		}
		taken[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", err
	}
	for _, c := range candidates {
		if !taken[c] {
			return c, nil
		}
	}
	return "", nil
}
