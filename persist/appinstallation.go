package persist

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
)

// App installation field limits, in Unicode characters.
const (
	MaxAppSlugLength        = 100
	MaxAppDisplayNameLength = 80
)

// AppInstallation binds an app (app_slug) to a workspace through one of its bot members. Any
// number of active installations may share an app_slug (integration rule 2).
type AppInstallation struct {
	ID          string          `json:"id"`
	WorkspaceID string          `json:"workspace_id"`
	AppSlug     string          `json:"app_slug"`
	DisplayName string          `json:"display_name"`
	BotUserID   string          `json:"bot_user_id"`
	Config      json.RawMessage `json:"config"`
	CreatedBy   string          `json:"created_by"`
	CreatedAt   time.Time       `json:"created_at"`
	RevokedAt   *time.Time      `json:"revoked_at,omitempty"`
}

const appInstallationColumns = `id, workspace_id, app_slug, display_name, bot_user_id, config, created_by, created_at, revoked_at`

func scanAppInstallation(row pgx.Row) (AppInstallation, error) {
	var a AppInstallation
	var config []byte
	err := row.Scan(&a.ID, &a.WorkspaceID, &a.AppSlug, &a.DisplayName, &a.BotUserID, &config, &a.CreatedBy,
		&a.CreatedAt, &a.RevokedAt)
	a.Config = config
	return a, err
}

// AppInstallationCreateParams are the fields of a new installation.
type AppInstallationCreateParams struct {
	AppSlug     string
	DisplayName string // default AppSlug
	BotUserID   string
	// Config is a JSON object; its known key default_channel_id must name a channel of the
	// workspace. Default {}.
	Config json.RawMessage
	// SetupNonce is an optional retry key, 16-128 characters (integration rule 7).
	SetupNonce string
	TokenName  string   // the installation token's name; default the app slug
	Scopes     []string // its scopes and bundles; default DefaultScopes
}

// AppInstallationCreated is what AppInstallationCreate made or found.
type AppInstallationCreated struct {
	Installation AppInstallation
	// Token is the installation's bot token, with its raw value: minted now, or on a replay the
	// same row under a fresh secret.
	Token BotToken
	// Replayed says the setup nonce matched an earlier creation.
	Replayed bool
}

// AppInstallationCreate installs an app in workspaceID: a human owner or moderator binds it to
// bot_user_id, a bot member of the workspace whose tokens the actor may manage (rule 6 of §Bots),
// and the installation gets its own bot token (its token lifecycle, integration rule 2). With a
// setup nonce already used by the actor in this workspace nothing new is created: the same
// installation, bot and token row come back, the token under a fresh raw value so earlier
// unconfirmed secrets stop working (integration rule 7). Codes: invalid_request, not_found
// (workspace, bot), forbidden, conflict (the nonce's installation was revoked).
func (tx *Tx) AppInstallationCreate(ctx context.Context, actor Actor, workspaceID string, p AppInstallationCreateParams) (AppInstallationCreated, error) {
	if _, err := tx.requireIntegrationManager(ctx, actor, workspaceID); err != nil {
		return AppInstallationCreated{}, err
	}
	slug, err := checkText("app_slug", p.AppSlug, MaxAppSlugLength, true)
	if err != nil {
		return AppInstallationCreated{}, err
	}
	if p.DisplayName == "" {
		p.DisplayName = slug
	}
	display, err := checkText("display_name", p.DisplayName, MaxAppDisplayNameLength, true)
	if err != nil {
		return AppInstallationCreated{}, err
	}
	config, err := tx.installationConfig(ctx, actor, workspaceID, p.Config)
	if err != nil {
		return AppInstallationCreated{}, err
	}
	if p.TokenName == "" {
		p.TokenName = slug
	}
	name, err := normalizeTokenName(p.TokenName)
	if err != nil {
		return AppInstallationCreated{}, err
	}
	scopes, err := ExpandScopes(p.Scopes)
	if err != nil {
		return AppInstallationCreated{}, err
	}
	bot, err := tx.requireBotManager(ctx, actor, workspaceID, p.BotUserID)
	if err != nil {
		return AppInstallationCreated{}, err
	}
	var nonceHash []byte
	if p.SetupNonce != "" {
		if n := len(p.SetupNonce); n < MinSetupNonceLength || n > MaxSetupNonceLength {
			return AppInstallationCreated{}, Invalid("setup_nonce must be %d to %d characters", MinSetupNonceLength, MaxSetupNonceLength)
		}
		nonceHash = HashSecret(p.SetupNonce)
		// Concurrent replays of one nonce queue here, so exactly one of them installs.
		if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('app:' || $1::text || ':' || $2::text || ':' || encode($3::bytea, 'hex'), 0))`,
			workspaceID, actor.UserID, nonceHash); err != nil {
			return AppInstallationCreated{}, err
		}
		var id string
		err := tx.queryRow(ctx, `SELECT installation_id FROM app_installation_nonces
			WHERE workspace_id = $1 AND created_by = $2 AND nonce_hash = $3`, workspaceID, actor.UserID, nonceHash).Scan(&id)
		if err == nil {
			return tx.appInstallationReplay(ctx, actor, workspaceID, id, bot, name, scopes)
		}
		if e := notFoundAs(err, "nonce"); e == err {
			return AppInstallationCreated{}, err
		}
	}
	id := NewID(PrefixAppInstallation, tx.now)
	inst, err := scanAppInstallation(tx.queryRow(ctx, `INSERT INTO app_installations
			(id, workspace_id, app_slug, display_name, bot_user_id, config, created_by, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+appInstallationColumns,
		id, workspaceID, slug, display, bot.ID, []byte(config), actor.UserID, tx.now))
	if err != nil {
		return AppInstallationCreated{}, err
	}
	token, err := tx.installationTokenInsert(ctx, inst, bot, name, scopes, actor.UserID)
	if err != nil {
		return AppInstallationCreated{}, err
	}
	if nonceHash != nil {
		if _, err := tx.exec(ctx, `INSERT INTO app_installation_nonces (workspace_id, created_by, nonce_hash, installation_id, created_at)
			VALUES ($1, $2, $3, $4, $5)`, workspaceID, actor.UserID, nonceHash, inst.ID, tx.now); err != nil {
			return AppInstallationCreated{}, err
		}
	}
	return AppInstallationCreated{Installation: inst, Token: token}, nil
}

// appInstallationReplay answers a repeated setup nonce: the same installation and bot, and the
// installation's token row under a new secret (a new row when it was revoked meanwhile).
func (tx *Tx) appInstallationReplay(ctx context.Context, actor Actor, workspaceID, id string, bot User, name string,
	scopes []string) (AppInstallationCreated, error) {
	inst, err := scanAppInstallation(tx.queryRow(ctx, `SELECT `+appInstallationColumns+` FROM app_installations
		WHERE workspace_id = $1 AND id = $2 FOR UPDATE`, workspaceID, id))
	if err != nil {
		return AppInstallationCreated{}, err
	}
	if inst.RevokedAt != nil {
		return AppInstallationCreated{}, Conflict("the installation this setup_nonce created has been revoked; use a new setup_nonce")
	}
	if inst.BotUserID != bot.ID {
		return AppInstallationCreated{}, Conflict("this setup_nonce installed another bot; use a new setup_nonce")
	}
	out := AppInstallationCreated{Installation: inst, Replayed: true}
	raw, hash := NewSecret(PrefixBotToken)
	t, err := scanBotToken(tx.queryRow(ctx, `UPDATE bot_tokens SET token_hash = $3
		WHERE id = (SELECT id FROM bot_tokens WHERE workspace_id = $1 AND app_installation_id = $2 AND revoked_at IS NULL
			ORDER BY created_at DESC, id DESC LIMIT 1)
		RETURNING `+botTokenColumns, workspaceID, inst.ID, hash))
	if err == nil {
		t.Token = raw
		out.Token = t
		return out, nil
	}
	if e := notFoundAs(err, "token"); e == err {
		return AppInstallationCreated{}, err
	}
	if out.Token, err = tx.installationTokenInsert(ctx, inst, bot, name, scopes, actor.UserID); err != nil {
		return AppInstallationCreated{}, err
	}
	return out, nil
}

// installationTokenInsert mints a bot token that belongs to an installation.
func (tx *Tx) installationTokenInsert(ctx context.Context, inst AppInstallation, bot User, name string, scopes []string, createdBy string) (BotToken, error) {
	t, err := tx.botTokenInsert(ctx, bot, inst.WorkspaceID, name, scopes, createdBy)
	if err != nil {
		return BotToken{}, err
	}
	_, err = tx.exec(ctx, `UPDATE bot_tokens SET app_installation_id = $2 WHERE id = $1`, t.ID, inst.ID)
	return t, err
}

// installationConfig checks an installation's config object and its known key
// default_channel_id (a channel of the workspace the installer sees). Codes: invalid_request.
func (tx *Tx) installationConfig(ctx context.Context, actor Actor, workspaceID string, raw json.RawMessage) (json.RawMessage, error) {
	config, err := jsonObject("config", raw)
	if err != nil {
		return nil, err
	}
	var known struct {
		DefaultChannelID *json.RawMessage `json:"default_channel_id"`
	}
	_ = json.Unmarshal(config, &known)
	if known.DefaultChannelID == nil {
		return config, nil
	}
	var channelID string
	if json.Unmarshal(*known.DefaultChannelID, &channelID) != nil || channelID == "" {
		return nil, Invalid("config.default_channel_id must be a channel id")
	}
	var exists bool
	if err := tx.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM channels WHERE workspace_id = $1 AND id = $2
			AND NOT `+channelHidden("id", "$3")+`)`, workspaceID, channelID, actor.UserID).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, Invalid("config.default_channel_id must name a channel of this workspace")
	}
	return config, nil
}

// AppInstallationList returns a workspace's active installations, oldest first. Human members
// other than waiting-room guests may list. Codes: not_found, forbidden.
func (tx *Tx) AppInstallationList(ctx context.Context, actor Actor, workspaceID string) ([]AppInstallation, error) {
	if _, err := tx.requireIntegrationViewer(ctx, actor, workspaceID); err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, `SELECT `+appInstallationColumns+` FROM app_installations
		WHERE workspace_id = $1 AND revoked_at IS NULL ORDER BY created_at, id`, workspaceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []AppInstallation{}
	for rows.Next() {
		a, err := scanAppInstallation(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// AppInstallationRevokeParams say what goes with a revoked installation.
type AppInstallationRevokeParams struct {
	SlashCommands      bool // its slash commands (the API's default: true)
	EventSubscriptions bool // its event subscriptions (default true)
	BotTokens          bool // every live token of its bot in its workspace (default false)
	DeleteBot          bool // retire its bot for good, as DELETE /api/bots/{id} (default false)
}

// RevokedCounts are the exact numbers of resources a revocation ended.
type RevokedCounts struct {
	SlashCommands      int `json:"slash_commands"`
	EventSubscriptions int `json:"event_subscriptions"`
	BotTokens          int `json:"bot_tokens"`
}

// AppInstallationRevoked is the outcome of a revocation.
type AppInstallationRevoked struct {
	Installation AppInstallation `json:"installation"`
	Revoked      RevokedCounts   `json:"revoked"`
	DeletedBot   *DeletedBot     `json:"deleted_bot,omitempty"`
}

// AppInstallationRevoke revokes an installation and, as asked, its slash commands, event
// subscriptions and bot tokens, and retires its bot (through BotDelete, whose rules apply), all
// in this transaction, answering exact counts. Revoking a revoked installation changes nothing
// and answers zero counts. A human owner or moderator of the workspace may revoke.
// Codes: not_found, forbidden (also those of BotDelete).
func (tx *Tx) AppInstallationRevoke(ctx context.Context, actor Actor, id string, p AppInstallationRevokeParams) (AppInstallationRevoked, error) {
	if err := requireHumanIntegrationActor(actor); err != nil {
		return AppInstallationRevoked{}, err
	}
	inst, err := scanAppInstallation(tx.queryRow(ctx, `SELECT `+appInstallationColumns+` FROM app_installations
		WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return AppInstallationRevoked{}, notFoundAs(err, "app installation")
	}
	if _, err := tx.requireIntegrationManager(ctx, actor, inst.WorkspaceID); err != nil {
		return AppInstallationRevoked{}, err
	}
	out := AppInstallationRevoked{Installation: inst}
	if inst.RevokedAt != nil {
		return out, nil
	}
	live, err := tx.liveIntegrationsOf(ctx, inst.ID, inst.BotUserID)
	if err != nil {
		return AppInstallationRevoked{}, err
	}
	if out.Installation, err = scanAppInstallation(tx.queryRow(ctx, `UPDATE app_installations SET revoked_at = $2
		WHERE id = $1 RETURNING `+appInstallationColumns, inst.ID, tx.now)); err != nil {
		return AppInstallationRevoked{}, err
	}
	if p.SlashCommands {
		if _, err := tx.exec(ctx, `UPDATE slash_commands SET revoked_at = $3
			WHERE workspace_id = $1 AND app_installation_id = $2 AND revoked_at IS NULL`, inst.WorkspaceID, inst.ID, tx.now); err != nil {
			return AppInstallationRevoked{}, err
		}
	}
	if p.EventSubscriptions {
		if _, err := tx.exec(ctx, `UPDATE event_subscriptions SET revoked_at = $3
			WHERE workspace_id = $1 AND app_installation_id = $2 AND revoked_at IS NULL`, inst.WorkspaceID, inst.ID, tx.now); err != nil {
			return AppInstallationRevoked{}, err
		}
	}
	if p.BotTokens {
		// Every token of the bot in this workspace, not only the one minted for the installation:
		// a bot whose installation is revoked with its tokens must not keep acting through another.
		if err := tx.revokeTokensWhere(ctx, `workspace_id = $1 AND bot_user_id = $2`, inst.WorkspaceID, inst.BotUserID); err != nil {
			return AppInstallationRevoked{}, err
		}
	}
	if p.DeleteBot {
		deleted, err := tx.BotDelete(ctx, actor, inst.BotUserID)
		if err != nil {
			return AppInstallationRevoked{}, err
		}
		out.DeletedBot = &deleted
	}
	if out.Revoked, err = tx.revokedOf(ctx, live); err != nil {
		return AppInstallationRevoked{}, err
	}
	return out, nil
}

// revokeTokensWhere revokes the live bot tokens matching cond ($1, $2 are args; $3 is now) and
// announces each revocation after commit, which cuts their sockets and NATS connections.
func (tx *Tx) revokeTokensWhere(ctx context.Context, cond string, arg1, arg2 string) error {
	rows, err := tx.query(ctx, `UPDATE bot_tokens SET revoked_at = $3 WHERE `+cond+` AND revoked_at IS NULL RETURNING id`,
		arg1, arg2, tx.now)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		tx.noteRevoked(Revocation{TokenID: id})
	}
	return rows.Err()
}

// botIntegrationsRevoke revokes, in workspaceID, botID's installations, the slash commands and
// event subscriptions it serves or that belong to those installations, and the accounts bound
// to it. It checks nothing: botLeave's callers authorize.
func (tx *Tx) botIntegrationsRevoke(ctx context.Context, workspaceID, botID string) error {
	for _, stmt := range []string{
		`UPDATE app_installations SET revoked_at = $3 WHERE workspace_id = $1 AND bot_user_id = $2 AND revoked_at IS NULL`,
		`UPDATE slash_commands SET revoked_at = $3 WHERE workspace_id = $1 AND revoked_at IS NULL AND (bot_user_id = $2
			OR app_installation_id IN (SELECT id FROM app_installations WHERE workspace_id = $1 AND bot_user_id = $2))`,
		`UPDATE event_subscriptions SET revoked_at = $3 WHERE workspace_id = $1 AND revoked_at IS NULL AND (bot_user_id = $2
			OR app_installation_id IN (SELECT id FROM app_installations WHERE workspace_id = $1 AND bot_user_id = $2))`,
	} {
		if _, err := tx.exec(ctx, stmt, workspaceID, botID, tx.now); err != nil {
			return err
		}
	}
	return tx.connectedAccountsRevokeForUser(ctx, workspaceID, botID, "bot_removed")
}
