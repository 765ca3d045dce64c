package persist

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// Connected-account field limits, in Unicode characters.
const (
	MaxProviderLength          = 64
	MaxProviderAccountIDLength = 256
	MaxAccountDisplayName      = 200
	MaxAccountScopes           = 100
)

// ConnectedAccount binds an account of an external provider to a workspace member.
type ConnectedAccount struct {
	ID                string          `json:"id"`
	WorkspaceID       string          `json:"workspace_id"`
	UserID            string          `json:"user_id"`
	Provider          string          `json:"provider"`
	ProviderAccountID string          `json:"provider_account_id"`
	DisplayName       string          `json:"display_name"`
	Scopes            []string        `json:"scopes"`
	Metadata          json.RawMessage `json:"metadata"`
	CreatedBy         string          `json:"created_by"`
	CreatedAt         time.Time       `json:"created_at"`
	RevokedAt         *time.Time      `json:"revoked_at,omitempty"`
}

const connectedAccountColumns = `id, workspace_id, user_id, provider, provider_account_id, display_name, scopes, metadata,
	created_by, created_at, revoked_at`

func scanConnectedAccount(row pgx.Row) (ConnectedAccount, error) {
	var a ConnectedAccount
	var metadata []byte
	err := row.Scan(&a.ID, &a.WorkspaceID, &a.UserID, &a.Provider, &a.ProviderAccountID, &a.DisplayName, &a.Scopes,
		&metadata, &a.CreatedBy, &a.CreatedAt, &a.RevokedAt)
	a.Metadata = metadata
	return a, err
}

// ConnectedAccountCreateParams are the fields of a new binding.
type ConnectedAccountCreateParams struct {
	UserID            string // a member of the workspace
	Provider          string
	ProviderAccountID string
	DisplayName       string
	Scopes            []string
	Metadata          json.RawMessage // a JSON object; default {}
}

// ConnectedAccountCreate binds an external account to a member of workspaceID and writes an
// audit entry. A human owner or moderator binds. Codes: invalid_request, not_found, forbidden.
func (tx *Tx) ConnectedAccountCreate(ctx context.Context, actor Actor, workspaceID string, p ConnectedAccountCreateParams) (ConnectedAccount, error) {
	if _, err := tx.requireIntegrationManager(ctx, actor, workspaceID); err != nil {
		return ConnectedAccount{}, err
	}
	provider, err := checkText("provider", p.Provider, MaxProviderLength, true)
	if err != nil {
		return ConnectedAccount{}, err
	}
	accountID, err := checkText("provider_account_id", p.ProviderAccountID, MaxProviderAccountIDLength, true)
	if err != nil {
		return ConnectedAccount{}, err
	}
	display, err := checkText("display_name", p.DisplayName, MaxAccountDisplayName, false)
	if err != nil {
		return ConnectedAccount{}, err
	}
	if len(p.Scopes) > MaxAccountScopes {
		return ConnectedAccount{}, Invalid("scopes holds at most %d entries", MaxAccountScopes)
	}
	scopes := []string{}
	for i, s := range p.Scopes {
		v, err := checkText("scopes", s, MaxProviderAccountIDLength, true)
		if err != nil {
			return ConnectedAccount{}, Invalid("scopes[%d] must be a non-empty string of at most %d characters", i, MaxProviderAccountIDLength)
		}
		scopes = append(scopes, v)
	}
	metadata, err := jsonObject("metadata", p.Metadata)
	if err != nil {
		return ConnectedAccount{}, err
	}
	var member bool
	if err := tx.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM workspace_members WHERE workspace_id = $1 AND user_id = $2 FOR SHARE)`,
		workspaceID, p.UserID).Scan(&member); err != nil {
		return ConnectedAccount{}, err
	}
	if !member {
		return ConnectedAccount{}, Invalid("user_id must be a member of this workspace")
	}
	a, err := scanConnectedAccount(tx.queryRow(ctx, `INSERT INTO connected_accounts (id, workspace_id, user_id, provider,
			provider_account_id, display_name, scopes, metadata, created_by, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING `+connectedAccountColumns,
		NewID(PrefixConnectedAccount, tx.now), workspaceID, p.UserID, provider, accountID, display, scopes, []byte(metadata),
		actor.UserID, tx.now))
	if err != nil {
		return ConnectedAccount{}, err
	}
	return a, tx.auditConnectedAccount(ctx, actor.UserID, "connected_account.created", a, "")
}

// ConnectedAccountList returns a workspace's active bindings, oldest first. Human members other
// than waiting-room guests may list. Codes: not_found, forbidden.
func (tx *Tx) ConnectedAccountList(ctx context.Context, actor Actor, workspaceID string) ([]ConnectedAccount, error) {
	if _, err := tx.requireIntegrationViewer(ctx, actor, workspaceID); err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, `SELECT `+connectedAccountColumns+` FROM connected_accounts
		WHERE workspace_id = $1 AND revoked_at IS NULL ORDER BY created_at, id`, workspaceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ConnectedAccount{}
	for rows.Next() {
		a, err := scanConnectedAccount(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// ConnectedAccountRevoke revokes a binding and writes an audit entry. The bound user (still a
// member), or a human owner or moderator of the workspace, may revoke; revoking a revoked binding
// returns it unchanged and writes nothing. Codes: not_found, forbidden.
func (tx *Tx) ConnectedAccountRevoke(ctx context.Context, actor Actor, id string) (ConnectedAccount, error) {
	a, err := scanConnectedAccount(tx.queryRow(ctx, `SELECT `+connectedAccountColumns+` FROM connected_accounts
		WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return ConnectedAccount{}, notFoundAs(err, "connected account")
	}
	if actor.UserID == a.UserID && !actor.IsBotToken() {
		_, err = tx.requireMember(ctx, a.WorkspaceID, actor)
	} else {
		_, err = tx.requireIntegrationManager(ctx, actor, a.WorkspaceID)
	}
	if err != nil || a.RevokedAt != nil {
		return a, err
	}
	if a, err = scanConnectedAccount(tx.queryRow(ctx, `UPDATE connected_accounts SET revoked_at = $3
		WHERE workspace_id = $1 AND id = $2 RETURNING `+connectedAccountColumns, a.WorkspaceID, a.ID, tx.now)); err != nil {
		return ConnectedAccount{}, err
	}
	return a, tx.auditConnectedAccount(ctx, actor.UserID, "connected_account.revoked", a, "")
}

// connectedAccountsRevokeForUser revokes userID's active bindings in workspaceID, by the system
// (actorID ""), with an audit entry each giving reason.
func (tx *Tx) connectedAccountsRevokeForUser(ctx context.Context, workspaceID, userID, reason string) error {
	rows, err := tx.query(ctx, `UPDATE connected_accounts SET revoked_at = $3
		WHERE workspace_id = $1 AND user_id = $2 AND revoked_at IS NULL RETURNING `+connectedAccountColumns, workspaceID, userID, tx.now)
	if err != nil {
		return err
	}
	var revoked []ConnectedAccount
	for rows.Next() {
		a, err := scanConnectedAccount(rows)
		if err != nil {
			rows.Close()
			return err
		}
		revoked = append(revoked, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, a := range revoked {
		if err := tx.auditConnectedAccount(ctx, "", "connected_account.revoked", a, reason); err != nil {
			return err
		}
	}
	return nil
}

// AuditLogEntry is one entry of a workspace's audit log. ActorUserID is empty when the system
// acted (a bot's removal revoking its bindings).
type AuditLogEntry struct {
	ID          string          `json:"id"`
	WorkspaceID string          `json:"workspace_id"`
	ActorUserID string          `json:"actor_user_id,omitempty"`
	Action      string          `json:"action"`
	TargetType  string          `json:"target_type"`
	TargetID    string          `json:"target_id"`
	Metadata    json.RawMessage `json:"metadata"`
	CreatedAt   time.Time       `json:"created_at"`
}

func (tx *Tx) auditConnectedAccount(ctx context.Context, actorID, action string, a ConnectedAccount, reason string) error {
	meta := map[string]any{"user_id": a.UserID, "provider": a.Provider, "provider_account_id": a.ProviderAccountID}
	if reason != "" {
		meta["reason"] = reason
	}
	return tx.auditAppend(ctx, a.WorkspaceID, actorID, action, "connected_account", a.ID, meta)
}

func (tx *Tx) auditAppend(ctx context.Context, workspaceID, actorID, action, targetType, targetID string, metadata any) error {
	meta, err := json.Marshal(metadata)
	if err != nil {
		return err
	}
	_, err = tx.exec(ctx, `INSERT INTO audit_log_entries (id, workspace_id, actor_user_id, action, target_type, target_id, metadata, created_at)
		VALUES ($1, $2, nullif($3, ''), $4, $5, $6, $7, $8)`,
		NewID(PrefixAuditEntry, tx.now), workspaceID, actorID, action, targetType, targetID, meta, tx.now)
	return err
}

// Audit log pages.
const (
	AuditPageDefault = 50
	AuditPageMax     = 200
)

// AuditPage is one page of a workspace's audit log, newest first; NextCursor (nil on the last
// page) is the id to pass as before.
type AuditPage struct {
	Entries    []AuditLogEntry `json:"audit_log_entries"`
	NextCursor *string         `json:"next_cursor"`
}

// AuditLogList returns a page of workspaceID's audit log, newest first, strictly older than the
// entry before names. Human owners and moderators may read it.
// Codes: not_found, forbidden, invalid_request (limit out of range, unknown before).
func (tx *Tx) AuditLogList(ctx context.Context, actor Actor, workspaceID, before string, limit int) (AuditPage, error) {
	m, err := tx.requireIntegrationViewer(ctx, actor, workspaceID)
	if err != nil {
		return AuditPage{}, err
	}
	if err := requireManager(m); err != nil {
		return AuditPage{}, err
	}
	if limit < 1 {
		return AuditPage{}, Invalid("limit must be 1 to %d", AuditPageMax)
	}
	limit = min(limit, AuditPageMax) // above the maximum is the maximum
	var below int64 = 1<<63 - 1
	if before != "" {
		err := tx.queryRow(ctx, `SELECT seq FROM audit_log_entries WHERE workspace_id = $1 AND id = $2`, workspaceID, before).Scan(&below)
		if e := notFoundAs(err, "entry"); e != err {
			return AuditPage{}, Invalid("before names no audit log entry of this workspace")
		} else if err != nil {
			return AuditPage{}, err
		}
	}
	rows, err := tx.query(ctx, `SELECT id, workspace_id, coalesce(actor_user_id, ''), action, target_type, target_id, metadata, created_at
		FROM audit_log_entries WHERE workspace_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`, workspaceID, below, limit+1)
	if err != nil {
		return AuditPage{}, err
	}
	defer rows.Close()
	page := AuditPage{Entries: []AuditLogEntry{}}
	for rows.Next() {
		var e AuditLogEntry
		var meta []byte
		if err := rows.Scan(&e.ID, &e.WorkspaceID, &e.ActorUserID, &e.Action, &e.TargetType, &e.TargetID, &meta, &e.CreatedAt); err != nil {
			return AuditPage{}, err
		}
		e.Metadata = meta
		page.Entries = append(page.Entries, e)
	}
	if err := rows.Err(); err != nil {
		return AuditPage{}, err
	}
	if len(page.Entries) > limit {
		page.Entries = page.Entries[:limit]
		next := page.Entries[limit-1].ID
		page.NextCursor = &next
	}
	return page, nil
}
