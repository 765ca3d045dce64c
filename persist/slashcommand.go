package persist

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// MaxSlashDescriptionLength bounds a slash command's description, in Unicode characters.
const MaxSlashDescriptionLength = 500

// MaxSlashTextLength bounds the text of an invocation, in Unicode characters.
const MaxSlashTextLength = 4000

// SlashCommand is a registered slash command. SigningSecret is set only in the result that
// created or rotated it; lists never carry it.
type SlashCommand struct {
	ID                string     `json:"id"`
	WorkspaceID       string     `json:"workspace_id"`
	AppInstallationID string     `json:"app_installation_id,omitempty"`
	Command           string     `json:"command"`
	Description       string     `json:"description"`
	CallbackURL       string     `json:"callback_url"`
	BotUserID         string     `json:"bot_user_id"`
	SigningSecret     string     `json:"signing_secret,omitempty"`
	CreatedBy         string     `json:"created_by"`
	CreatedAt         time.Time  `json:"created_at"`
	RevokedAt         *time.Time `json:"revoked_at,omitempty"`
}

const slashCommandColumns = `id, workspace_id, coalesce(app_installation_id, ''), command, description, callback_url,
	bot_user_id, created_by, created_at, revoked_at`

func scanSlashCommand(row pgx.Row) (SlashCommand, error) {
	var c SlashCommand
	err := row.Scan(&c.ID, &c.WorkspaceID, &c.AppInstallationID, &c.Command, &c.Description, &c.CallbackURL,
		&c.BotUserID, &c.CreatedBy, &c.CreatedAt, &c.RevokedAt)
	return c, err
}

// SlashCommandCreateParams are the fields of a registration.
type SlashCommandCreateParams struct {
	AppInstallationID string // optional: an active installation of the workspace
	Command           string // normalized to lowercase with a leading slash
	Description       string
	CallbackURL       string
	BotUserID         string // a bot member of the workspace; default the installation's bot
}

// SlashCommandCreate registers a command in workspaceID with a fresh signing secret, returned
// once. A human owner or moderator registers; the command name is unique among the workspace's
// active registrations. Codes: invalid_request, not_found (workspace), forbidden, conflict.
func (tx *Tx) SlashCommandCreate(ctx context.Context, actor Actor, workspaceID string, p SlashCommandCreateParams) (SlashCommand, error) {
	if _, err := tx.requireIntegrationManager(ctx, actor, workspaceID); err != nil {
		return SlashCommand{}, err
	}
	command, err := NormalizeBotCommand(p.Command)
	if err != nil {
		return SlashCommand{}, err
	}
	description, err := checkText("description", p.Description, MaxSlashDescriptionLength, false)
	if err != nil {
		return SlashCommand{}, err
	}
	callback, err := validateCallbackURL(p.CallbackURL)
	if err != nil {
		return SlashCommand{}, err
	}
	if p.AppInstallationID != "" {
		inst, err := tx.activeInstallation(ctx, workspaceID, p.AppInstallationID)
		if err != nil {
			return SlashCommand{}, err
		}
		if p.BotUserID == "" {
			p.BotUserID = inst.BotUserID
		}
	}
	if err := tx.requireWorkspaceBot(ctx, workspaceID, p.BotUserID); err != nil {
		return SlashCommand{}, err
	}
	secret := newSigningSecret()
	c, err := scanSlashCommand(tx.queryRow(ctx, `INSERT INTO slash_commands (id, workspace_id, app_installation_id, command,
			description, callback_url, bot_user_id, signing_secret, created_by, created_at)
		VALUES ($1, $2, nullif($3, ''), $4, $5, $6, $7, $8, $9, $10) RETURNING `+slashCommandColumns,
		NewID(PrefixSlashCommand, tx.now), workspaceID, p.AppInstallationID, command, description, callback, p.BotUserID,
		secret, actor.UserID, tx.now))
	c.SigningSecret = secret
	return c, err
}

func (tx *Tx) slashCommandSetSecret(ctx context.Context, c SlashCommand) (SlashCommand, error) {
	secret := newSigningSecret()
	if _, err := tx.exec(ctx, `UPDATE slash_commands SET signing_secret = $3 WHERE workspace_id = $1 AND id = $2`,
		c.WorkspaceID, c.ID, secret); err != nil {
		return SlashCommand{}, err
	}
	c.SigningSecret = secret
	return c, nil
}

// activeInstallation returns an active installation of workspaceID. Codes: invalid_request.
func (tx *Tx) activeInstallation(ctx context.Context, workspaceID, id string) (AppInstallation, error) {
	inst, err := scanAppInstallation(tx.queryRow(ctx, `SELECT `+appInstallationColumns+` FROM app_installations
		WHERE workspace_id = $1 AND id = $2 AND revoked_at IS NULL FOR SHARE`, workspaceID, id))
	if e := notFoundAs(err, "installation"); e != err {
		return AppInstallation{}, Invalid("app_installation_id must name an active app installation of this workspace")
	}
	return inst, err
}

// requireWorkspaceBot checks that botID is a live bot member of workspaceID (locking the
// membership, so a concurrent removal waits). Codes: invalid_request.
func (tx *Tx) requireWorkspaceBot(ctx context.Context, workspaceID, botID string) error {
	if _, err := tx.workspaceBot(ctx, workspaceID, botID); err != nil {
		if IsCode(err, CodeNotFound) {
			return Invalid("bot_user_id must be a bot member of this workspace")
		}
		return err
	}
	return nil
}

// IsCode reports whether err is an *Error with code.
func IsCode(err error, code Code) bool {
	e, ok := ErrorOf(err)
	return ok && e.Code == code
}

// SlashCommandList returns a workspace's active registrations, secrets redacted, by command.
// Human members other than waiting-room guests may list. Codes: not_found, forbidden.
func (tx *Tx) SlashCommandList(ctx context.Context, actor Actor, workspaceID string) ([]SlashCommand, error) {
	if _, err := tx.requireIntegrationViewer(ctx, actor, workspaceID); err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, `SELECT `+slashCommandColumns+` FROM slash_commands
		WHERE workspace_id = $1 AND revoked_at IS NULL ORDER BY command, id`, workspaceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []SlashCommand{}
	for rows.Next() {
		c, err := scanSlashCommand(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// slashCommandForManager loads a registration for a change by a human owner or moderator of its
// workspace. Codes: not_found, forbidden.
func (tx *Tx) slashCommandForManager(ctx context.Context, actor Actor, id string) (SlashCommand, error) {
	if err := requireHumanIntegrationActor(actor); err != nil {
		return SlashCommand{}, err
	}
	c, err := scanSlashCommand(tx.queryRow(ctx, `SELECT `+slashCommandColumns+` FROM slash_commands WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return SlashCommand{}, notFoundAs(err, "slash command")
	}
	_, err = tx.requireIntegrationManager(ctx, actor, c.WorkspaceID)
	return c, err
}

// SlashCommandRevoke revokes a registration; revoking a revoked one returns it unchanged.
// Codes: not_found, forbidden.
func (tx *Tx) SlashCommandRevoke(ctx context.Context, actor Actor, id string) (SlashCommand, error) {
	c, err := tx.slashCommandForManager(ctx, actor, id)
	if err != nil || c.RevokedAt != nil {
		return c, err
	}
	return scanSlashCommand(tx.queryRow(ctx, `UPDATE slash_commands SET revoked_at = $3
		WHERE workspace_id = $1 AND id = $2 RETURNING `+slashCommandColumns, c.WorkspaceID, c.ID, tx.now))
}

// SlashCommandRotateSecret gives a registration a fresh signing secret, returned once; the old
// one stops signing at once. Codes: not_found, forbidden, invalid_request (revoked).
func (tx *Tx) SlashCommandRotateSecret(ctx context.Context, actor Actor, id string) (SlashCommand, error) {
	c, err := tx.slashCommandForManager(ctx, actor, id)
	if err != nil {
		return SlashCommand{}, err
	}
	if c.RevokedAt != nil {
		return SlashCommand{}, Invalid("this slash command is revoked; its secret cannot be rotated")
	}
	return tx.slashCommandSetSecret(ctx, c)
}

// SlashInvocation is a persisted invocation of a registered command: what its callback needs.
type SlashInvocation struct {
	ID            string // also the trigger_id sent to the callback
	CommandID     string
	Command       string
	Text          string
	WorkspaceID   string
	ChannelID     string
	UserID        string
	BotUserID     string
	CallbackURL   string
	SigningSecret string
}

// SlashStarted is the outcome of SlashCommandStart: a registered command's invocation, waiting
// for its callback, or (for an unregistered command) the message posted as the caller.
type SlashStarted struct {
	Invocation *SlashInvocation
	Posted     *MessageCreated
	Text       string // the text posted for an unregistered command
}

// SlashCommandStart handles POST /api/hooks/slash/{channel_id}. A registered command of the
// channel's workspace needs the caller's current write authority for that channel (guest
// channel, timeout, block, and one post of a guest's budget, spent here even if the callback
// later fails, integration rule 6) and is persisted as an invocation for the caller to call back.
// An unregistered one posts the trimmed "<command> <text>" as the caller.
// Codes: invalid_request, not_found, forbidden, rate_limited (and those of MessageCreate).
func (tx *Tx) SlashCommandStart(ctx context.Context, actor Actor, channelID, command, text string) (SlashStarted, error) {
	if strings.TrimSpace(command) == "" {
		return SlashStarted{}, Invalid("command is required")
	}
	if _, err := checkText("text", text, MaxSlashTextLength, false); err != nil {
		return SlashStarted{}, err
	}
	ch, _, err := tx.ChannelForRead(ctx, actor, channelID)
	if err != nil {
		return SlashStarted{}, err
	}
	var c SlashCommand
	var secret string
	if name, err := NormalizeBotCommand(command); err == nil {
		err = tx.queryRow(ctx, `SELECT `+slashCommandColumns+`, signing_secret FROM slash_commands
			WHERE workspace_id = $1 AND command = $2 AND revoked_at IS NULL FOR SHARE`, ch.WorkspaceID, name).
			Scan(&c.ID, &c.WorkspaceID, &c.AppInstallationID, &c.Command, &c.Description, &c.CallbackURL,
				&c.BotUserID, &c.CreatedBy, &c.CreatedAt, &c.RevokedAt, &secret)
		if e := notFoundAs(err, "command"); e == err && err != nil {
			return SlashStarted{}, err
		}
	}
	if c.ID == "" {
		body := strings.TrimSpace(strings.TrimSpace(command) + " " + strings.TrimSpace(text))
		posted, err := tx.MessageCreate(ctx, actor, Place{ChannelID: ch.ID}, MessageCreateParams{Body: body})
		return SlashStarted{Posted: &posted, Text: body}, err
	}
	if _, _, err := tx.ChannelForWrite(ctx, actor, ch.ID); err != nil {
		return SlashStarted{}, err
	}
	inv := SlashInvocation{ID: NewID(PrefixSlashInvocation, tx.now), CommandID: c.ID, Command: c.Command, Text: text,
		WorkspaceID: c.WorkspaceID, ChannelID: ch.ID, UserID: actor.UserID, BotUserID: c.BotUserID,
		CallbackURL: c.CallbackURL, SigningSecret: secret}
	if _, err := tx.exec(ctx, `INSERT INTO slash_command_invocations (id, workspace_id, slash_command_id, channel_id, user_id, text, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, inv.ID, inv.WorkspaceID, inv.CommandID, inv.ChannelID, inv.UserID, text, tx.now); err != nil {
		return SlashStarted{}, err
	}
	return SlashStarted{Invocation: &inv}, nil
}

// SlashCallbackOutcome is what a callback answered (Status 0 when it never answered).
type SlashCallbackOutcome struct {
	Status int
	Body   string
	Error  string
}

// SlashCommandComplete stores the outcome of an invocation's callback. It checks nothing: the
// invocation was authorized when it started.
func (tx *Tx) SlashCommandComplete(ctx context.Context, inv SlashInvocation, o SlashCallbackOutcome) error {
	_, err := tx.exec(ctx, `UPDATE slash_command_invocations
		SET callback_status = nullif($3, 0), callback_body = $4, callback_error = nullif($5, ''), completed_at = $6
		WHERE workspace_id = $1 AND id = $2`, inv.WorkspaceID, inv.ID, o.Status, cleanText(o.Body), o.Error, tx.now)
	return err
}

// SlashCommandReply posts a callback's in_channel reply text as the command's bot user
// (integration rule 5), under the bot's own membership and the channel's write rules; its
// message.created carries correlationID, that of the invoking request. Codes: those of
// MessageCreate.
func (tx *Tx) SlashCommandReply(ctx context.Context, inv SlashInvocation, text, correlationID string) (MessageCreated, error) {
	bot, err := tx.UserGet(ctx, inv.BotUserID)
	if err != nil {
		return MessageCreated{}, err
	}
	actor := ActorFor(bot)
	actor.CorrelationID = correlationID
	return tx.MessageCreate(ctx, actor, Place{ChannelID: inv.ChannelID}, MessageCreateParams{Body: text})
}

// SlashInvocationOutcomeForTest reads the stored callback outcome of an invocation (its
// trigger_id). Only tests call it: no route shows invocations.
func (tx *Tx) SlashInvocationOutcomeForTest(ctx context.Context, id string) (SlashCallbackOutcome, error) {
	var o SlashCallbackOutcome
	err := tx.queryRow(ctx, `SELECT coalesce(callback_status, 0), coalesce(callback_body, ''), coalesce(callback_error, '')
		FROM slash_command_invocations WHERE id = $1`, id).Scan(&o.Status, &o.Body, &o.Error)
	return o, notFoundAs(err, "invocation")
}
