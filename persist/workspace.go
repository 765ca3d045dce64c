package persist

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

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
	// Role is the reading actor's role, set by the reads made for an actor (WorkspaceList,
	// WorkspaceRead, and the results of the mutations); empty elsewhere, event payloads included.
	Role string
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
		Role      string    `json:"role,omitempty"`
	}
	out := wire{ID: w.ID, RouteID: w.RouteID, Name: w.Name, Slug: w.Slug, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt, Role: w.Role}
	if w.IconUploadID != "" {
		out.IconURL = "/api/uploads/" + w.IconUploadID
	}
	return json.Marshal(out)
}

// workspaceColumnsOf lists the columns scanWorkspace reads, qualified by a table alias such as "w.".
func workspaceColumnsOf(a string) string {
	return fmt.Sprintf(`%[1]sid, %[1]sroute_id, %[1]sname, %[1]sslug, coalesce(%[1]sicon_upload_id, ''),
	coalesce(%[1]screated_by, ''), %[1]screated_at, %[1]supdated_at`, a)
}

var workspaceColumns = workspaceColumnsOf("")

func workspaceDest(w *Workspace) []any {
	return []any{&w.ID, &w.RouteID, &w.Name, &w.Slug, &w.IconUploadID, &w.CreatedBy, &w.CreatedAt, &w.UpdatedAt}
}

func scanWorkspace(row pgx.Row) (Workspace, error) {
	var w Workspace
	err := row.Scan(workspaceDest(&w)...)
	return w, err
}

// WorkspaceCreate creates a workspace owned by creatorID, with its event log head. slug defaults
// to the slugified name. Codes: invalid_request (name, slug, reserved slug), conflict (slug taken).
func (tx *Tx) WorkspaceCreate(ctx context.Context, creatorID, name, slug string) (Workspace, error) {
	name, err := normalizeWorkspaceName(name)
	if err != nil {
		return Workspace{}, err
	}
	slug, err = normalizeSlug(slug, name)
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
	w.Role = RoleOwner
	return w, nil
}

// MaxWorkspaceNameLength bounds workspace names, in Unicode characters.
const MaxWorkspaceNameLength = 80

// normalizeWorkspaceName trims a name and checks its length. Codes: invalid_request.
func normalizeWorkspaceName(raw string) (string, error) {
	name := strings.TrimSpace(raw)
	if name == "" || utf8.RuneCountInString(name) > MaxWorkspaceNameLength {
		return "", Invalid("name must be 1 to %d characters", MaxWorkspaceNameLength)
	}
	return name, nil
}

// normalizeSlug slugifies an explicit slug, or the name when slug is empty, and refuses reserved
// slugs. Codes: invalid_request.
func normalizeSlug(slug, name string) (string, error) {
	if strings.TrimSpace(slug) == "" {
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

// WorkspaceList returns the workspaces the actor belongs to, by name, each with the actor's
// role. A bot token sees only its own workspace; a user bot only those its owner still belongs to.
func (tx *Tx) WorkspaceList(ctx context.Context, actor Actor) ([]Workspace, error) {
	rows, err := tx.query(ctx, `SELECT `+workspaceColumnsOf("w.")+`, m.role
		FROM workspace_members m JOIN workspaces w ON w.id = m.workspace_id
		WHERE m.user_id = $1
			AND ($2 = '' OR w.id = $2)
			AND ($3 = '' OR EXISTS (SELECT 1 FROM workspace_members o
				WHERE o.workspace_id = m.workspace_id AND o.user_id = $3))
		ORDER BY lower(w.name), w.id`, actor.UserID, actor.TokenWorkspaceID, actor.OwnerUserID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Workspace{}
	for rows.Next() {
		var w Workspace
		if err := rows.Scan(append(workspaceDest(&w), &w.Role)...); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// WorkspaceRead returns a workspace the actor belongs to, with the actor's role.
// Codes: not_found, forbidden (not a member).
func (tx *Tx) WorkspaceRead(ctx context.Context, actor Actor, id string) (Workspace, error) {
	m, err := tx.requireMemberToRead(ctx, id, actor)
	if err != nil {
		return Workspace{}, err
	}
	w, err := tx.WorkspaceGet(ctx, id)
	w.Role = m.Role
	return w, err
}

// WorkspacePatch holds the fields of PATCH /api/workspaces/{id}; nil means unchanged.
type WorkspacePatch struct {
	Name *string
	Slug *string
	// IconURL is "/api/uploads/<upload_id>" (or the bare upload id) of an upload of the same
	// workspace; "" clears the icon.
	IconURL *string
}

// WorkspaceUpdate changes a workspace's name, slug or icon and appends workspace.updated. The
// actor must be its owner or a moderator. Codes: invalid_request (a field breaks a rule, a
// reserved slug, an icon that does not resolve, nothing to change), not_found, forbidden,
// conflict (slug taken).
func (tx *Tx) WorkspaceUpdate(ctx context.Context, actor Actor, id string, p WorkspacePatch) (Workspace, Event, error) {
	m, err := tx.requireMember(ctx, id, actor)
	if err != nil {
		return Workspace{}, Event{}, err
	}
	if err := tx.requireManagerWriter(ctx, m); err != nil {
		return Workspace{}, Event{}, err
	}
	if p.Name == nil && p.Slug == nil && p.IconURL == nil {
		return Workspace{}, Event{}, Invalid("send at least one of name, slug, icon_url")
	}
	w, err := scanWorkspace(tx.queryRow(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return Workspace{}, Event{}, notFoundAs(err, "workspace")
	}
	if p.Name != nil {
		if w.Name, err = normalizeWorkspaceName(*p.Name); err != nil {
			return Workspace{}, Event{}, err
		}
	}
	if p.Slug != nil {
		if strings.TrimSpace(*p.Slug) == "" {
			return Workspace{}, Event{}, Invalid("slug must not be empty")
		}
		if w.Slug, err = normalizeSlug(*p.Slug, ""); err != nil {
			return Workspace{}, Event{}, err
		}
	}
	if p.IconURL != nil {
		if w.IconUploadID, err = tx.workspaceIcon(ctx, id, *p.IconURL); err != nil {
			return Workspace{}, Event{}, err
		}
	}
	w, err = scanWorkspace(tx.queryRow(ctx, `UPDATE workspaces SET name = $2, slug = $3,
			icon_upload_id = nullif($4, ''), updated_at = $5
		WHERE id = $1 RETURNING `+workspaceColumns, id, w.Name, w.Slug, w.IconUploadID, tx.now))
	if err != nil {
		return Workspace{}, Event{}, err
	}
	ev, err := tx.EventAppend(ctx, workspaceEvent("workspace.updated", w, actor.UserID, nil))
	w.Role = m.Role
	return w, ev, err
}

// WorkspaceDelete deletes a workspace and everything in it, permanently, in this transaction
// (every workspace table cascades from workspaces). Only the owner may. Its upload objects are
// queued for deletion first (UploadDeletionList): the caller deletes them from the upload store
// after commit. The instance's default workspace setting is cleared when it named this one.
// Codes: not_found, forbidden.
func (tx *Tx) WorkspaceDelete(ctx context.Context, actor Actor, id string) error {
	m, err := tx.requireMember(ctx, id, actor)
	if err != nil {
		return err
	}
	if m.Role != RoleOwner {
		return Forbidden("workspace owner permission required")
	}
	if err := tx.uploadDeletionsQueue(ctx, id); err != nil {
		return err
	}
	if _, err := tx.exec(ctx, `DELETE FROM workspaces WHERE id = $1`, id); err != nil {
		return err
	}
	tx.noteWorkspaceDeleted(id)
	_, err = tx.exec(ctx, `DELETE FROM instance_settings WHERE key = $1 AND value = $2`, SettingDefaultWorkspace, id)
	return err
}

// WorkspaceTransferOwnership makes targetUserID the owner and the actor, the current owner, a
// moderator, then appends workspace.ownership_transferred. The target must be a human member or
// moderator. Codes: invalid_request (target is the owner, a guest, a bot), not_found (workspace,
// target not a member), forbidden (actor not the owner).
func (tx *Tx) WorkspaceTransferOwnership(ctx context.Context, actor Actor, id, targetUserID string) (Workspace, Event, error) {
	m, err := tx.requireMemberForUpdate(ctx, id, actor)
	if err != nil {
		return Workspace{}, Event{}, err
	}
	if m.Role != RoleOwner {
		return Workspace{}, Event{}, Forbidden("workspace owner permission required")
	}
	if targetUserID == actor.UserID {
		return Workspace{}, Event{}, Invalid("you already own this workspace")
	}
	target, err := tx.memberForUpdate(ctx, id, targetUserID)
	if err != nil {
		return Workspace{}, Event{}, err
	}
	if target.User.Kind != KindHuman || (target.Role != RoleMember && target.Role != RoleModerator) {
		return Workspace{}, Event{}, Invalid("ownership can pass only to a human member or moderator")
	}
	// Demote first: the one-owner index is checked row by row.
	if err := tx.memberSetRole(ctx, id, actor.UserID, RoleModerator, actor.UserID); err != nil {
		return Workspace{}, Event{}, err
	}
	if err := tx.memberSetRole(ctx, id, targetUserID, RoleOwner, actor.UserID); err != nil {
		return Workspace{}, Event{}, err
	}
	w, err := tx.WorkspaceGet(ctx, id)
	if err != nil {
		return Workspace{}, Event{}, err
	}
	ev, err := tx.EventAppend(ctx, workspaceEvent("workspace.ownership_transferred", w, actor.UserID,
		map[string]any{"previous_owner_id": actor.UserID, "owner_id": targetUserID}))
	w.Role = RoleModerator
	return w, ev, err
}

// WorkspaceGetByRef finds a workspace by id, route id or slug, for operator commands.
// Codes: not_found.
func (tx *Tx) WorkspaceGetByRef(ctx context.Context, ref string) (Workspace, error) {
	w, err := scanWorkspace(tx.queryRow(ctx, `SELECT `+workspaceColumns+` FROM workspaces
		WHERE id = $1 OR route_id = $1 OR slug = $1
		ORDER BY id = $1 DESC, route_id = $1 DESC LIMIT 1`, strings.TrimSpace(ref)))
	return w, notFoundAs(err, "workspace")
}

// requireManager admits the owner and moderators. Codes: forbidden.
func requireManager(m Member) error {
	if m.Role != RoleOwner && m.Role != RoleModerator {
		return Forbidden("workspace owner or moderator permission required")
	}
	return nil
}

// requireManagerWriter admits the owner and moderators who may write now: a moderator the owner
// timed out or blocked cannot change the workspace, its members or its invites meanwhile.
// Codes: forbidden.
func (tx *Tx) requireManagerWriter(ctx context.Context, m Member) error {
	if err := requireManager(m); err != nil {
		return err
	}
	return tx.requireWriter(ctx, m)
}

// WorkspacesExisting returns those of ids that name a workspace: what a process checks before it
// acts on a workspace it only heard of over NATS (a stream-created advisory, a stream's name).
func (tx *Reader) WorkspacesExisting(ctx context.Context, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.query(ctx, `SELECT id FROM workspaces WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
