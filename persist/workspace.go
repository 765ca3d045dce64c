package persist

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Member roles.
const (
	RoleOwner     = "owner"
	RoleModerator = "moderator"
	RoleMember    = "member"
	RoleGuest     = "guest"
	RoleBot       = "bot"
)

// reservedSlugs may not name a workspace.
var reservedSlugs = map[string]bool{"clickclack": true, "guests": true}

// Workspace is the top-level container.
type Workspace struct {
	ID           string
	RouteID      string
	Name         string
	Slug         string
	IconUploadID string
	CreatedBy    string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// MarshalJSON renders the API shape: the icon as the URL of its upload.
func (w Workspace) MarshalJSON() ([]byte, error) {
	type wire struct {
		ID        string    `json:"id"`
		RouteID   string    `json:"route_id"`
		Name      string    `json:"name"`
		Slug      string    `json:"slug"`
		IconURL   string    `json:"icon_url,omitempty"`
		CreatedAt time.Time `json:"created_at"`
		UpdatedAt time.Time `json:"updated_at"`
	}
	out := wire{ID: w.ID, RouteID: w.RouteID, Name: w.Name, Slug: w.Slug, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt}
	if w.IconUploadID != "" {
		out.IconURL = "/api/uploads/" + w.IconUploadID
	}
	return json.Marshal(out)
}

const workspaceColumns = `id, route_id, name, slug, coalesce(icon_upload_id, ''), coalesce(created_by, ''), created_at, updated_at`

func scanWorkspace(row pgx.Row) (Workspace, error) {
	var w Workspace
	err := row.Scan(&w.ID, &w.RouteID, &w.Name, &w.Slug, &w.IconUploadID, &w.CreatedBy, &w.CreatedAt, &w.UpdatedAt)
	return w, err
}

// WorkspaceCreate creates a workspace owned by creatorID, with its event log head. slug defaults
// to the slugified name. Codes: invalid_request (name, slug, reserved slug), conflict (slug taken).
func (tx *Tx) WorkspaceCreate(ctx context.Context, creatorID, name, slug string) (Workspace, error) {
	name = strings.TrimSpace(name)
	if name == "" || len([]rune(name)) > 80 {
		return Workspace{}, Invalid("name must be 1 to 80 characters")
	}
	slug, err := normalizeSlug(slug, name)
	if err != nil {
		return Workspace{}, err
	}
	id := NewID(PrefixWorkspace, tx.now)
	w, err := scanWorkspace(tx.queryRow(ctx, `
		INSERT INTO workspaces (id, route_id, name, slug, created_by, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING `+workspaceColumns,
		id, RouteID("T", id), name, slug, creatorID, tx.now))
	if err != nil {
		return Workspace{}, err
	}
	if _, err := tx.exec(ctx, `INSERT INTO event_heads (workspace_id) VALUES ($1)`, w.ID); err != nil {
		return Workspace{}, err
	}
	if _, err := tx.MemberAdd(ctx, w.ID, creatorID, RoleOwner); err != nil {
		return Workspace{}, err
	}
	return w, nil
}

// normalizeSlug slugifies an explicit slug, or the name when slug is empty, and refuses reserved
// slugs. Codes: invalid_request.
func normalizeSlug(slug, name string) (string, error) {
	explicit := strings.TrimSpace(slug) != ""
	if !explicit {
		slug = name
	}
	s := Slugify(slug)
	if s == "" {
		return "", Invalid("slug must contain a letter or digit")
	}
	if reservedSlugs[s] {
		return "", Invalid("the slug %q is reserved", s)
	}
	return s, nil
}

// WorkspaceGet returns a workspace by id. Codes: not_found.
func (tx *Tx) WorkspaceGet(ctx context.Context, id string) (Workspace, error) {
	w, err := scanWorkspace(tx.queryRow(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE id = $1`, id))
	return w, notFoundAs(err, "workspace")
}

// Member is a user's place in a workspace.
type Member struct {
	WorkspaceID    string     `json:"workspace_id"`
	UserID         string     `json:"user_id"`
	Role           string     `json:"role"`
	JoinedAt       time.Time  `json:"joined_at"`
	TimeoutUntil   *time.Time `json:"timeout_until,omitempty"`
	BlockedAt      *time.Time `json:"blocked_at,omitempty"`
	ModerationNote string     `json:"moderation_note,omitempty"`
}

const memberColumns = `workspace_id, user_id, role, joined_at, timeout_until, blocked_at, coalesce(moderation_note, '')`

func scanMember(row pgx.Row) (Member, error) {
	var m Member
	err := row.Scan(&m.WorkspaceID, &m.UserID, &m.Role, &m.JoinedAt, &m.TimeoutUntil, &m.BlockedAt, &m.ModerationNote)
	return m, err
}

// MemberAdd adds a user to a workspace with a role; an existing member keeps their role.
// Codes: invalid_request (unknown role), not_found (user or workspace).
func (tx *Tx) MemberAdd(ctx context.Context, workspaceID, userID, role string) (Member, error) {
	switch role {
	case RoleOwner, RoleModerator, RoleMember, RoleGuest, RoleBot:
	default:
		return Member{}, Invalid("role must be owner, moderator, member, guest or bot")
	}
	if _, err := tx.exec(ctx, `INSERT INTO workspace_members (workspace_id, user_id, role, joined_at)
		SELECT $1, u.id, $3, $4 FROM users u WHERE u.id = $2 AND u.deleted_at IS NULL
		ON CONFLICT (workspace_id, user_id) DO NOTHING`, workspaceID, userID, role, tx.now); err != nil {
		return Member{}, err
	}
	return tx.MemberGet(ctx, workspaceID, userID)
}

// MemberGet returns a membership. Codes: not_found.
func (tx *Tx) MemberGet(ctx context.Context, workspaceID, userID string) (Member, error) {
	m, err := scanMember(tx.queryRow(ctx, `SELECT `+memberColumns+` FROM workspace_members
		WHERE workspace_id = $1 AND user_id = $2`, workspaceID, userID))
	return m, notFoundAs(err, "member")
}
