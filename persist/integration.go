package persist

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Integration id prefixes and the prefix of signing secrets.
const (
	PrefixAppInstallation   = "app_"
	PrefixSlashCommand      = "cmd_"
	PrefixSlashInvocation   = "trg_"
	PrefixEventSubscription = "sub_"
	PrefixDeliveryAttempt   = "eda_"
	PrefixConnectedAccount  = "acc_"
	PrefixAuditEntry        = "aud_"
	PrefixSigningSecret     = "whsec_"
)

// EventTypes is the durable event vocabulary (CONTRACT.md §Events), what GET /api/event-types
// lists and what event subscriptions may name; AllEventTypes ("*") stands for every one.
var EventTypes = []string{
	"channel.created", "channel.updated", "message.created", "message.updated", "message.deleted",
	"thread.reply_created", "thread.state_updated", "reaction.added", "reaction.removed", "pin.added",
	"pin.removed", "member.moderation_updated", "member.removed", "workspace.updated", "workspace.ownership_transferred",
	"channel.member_added", "channel.member_removed",
}

// AllEventTypes subscribes to every durable event type.
const AllEventTypes = "*"

// MaxCallbackURLLength bounds callback URLs, in bytes.
const MaxCallbackURLLength = 2048

// requireIntegrationManager is integration rule 1 for writes: a human owner or moderator of the
// workspace, neither timed out nor blocked. Bot tokens never mutate integrations.
// Codes: not_found (workspace), forbidden.
func (tx *Tx) requireIntegrationManager(ctx context.Context, actor Actor, workspaceID string) (Member, error) {
	if err := requireHumanIntegrationActor(actor); err != nil {
		return Member{}, err
	}
	m, err := tx.requireMember(ctx, workspaceID, actor)
	if err != nil {
		return Member{}, err
	}
	return m, tx.requireManagerWriter(ctx, m)
}

// requireIntegrationViewer is integration rule 1 for reads: human members, other than
// waiting-room guests (who see only the guest channel). Codes: not_found, forbidden.
func (tx *Tx) requireIntegrationViewer(ctx context.Context, actor Actor, workspaceID string) (Member, error) {
	if err := requireHumanIntegrationActor(actor); err != nil {
		return Member{}, err
	}
	m, err := tx.requireMemberToRead(ctx, workspaceID, actor)
	if err != nil {
		return Member{}, err
	}
	if m.Role == RoleGuest {
		return Member{}, Forbidden("guests cannot see the workspace's integrations")
	}
	return m, nil
}

func requireHumanIntegrationActor(a Actor) error {
	if a.IsBotToken() || a.Kind == KindBot {
		return Forbidden("bot tokens cannot manage or list integrations")
	}
	return nil
}

// newSigningSecret is a fresh callback signing secret. It is stored as it is (every callback is
// signed with it) and shown only when created or rotated.
func newSigningSecret() string {
	raw, _ := NewSecret(PrefixSigningSecret)
	return raw
}

// validateCallbackURL checks the form of a callback URL: absolute http(s), a host, no
// credentials. Where it may point is decided when it is called (outbound), since DNS
// answers change. Codes: invalid_request.
func validateCallbackURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return "", Invalid("callback_url must be an absolute http or https URL")
	}
	if u.User != nil {
		return "", Invalid("callback_url must not carry credentials")
	}
	if len(raw) > MaxCallbackURLLength {
		return "", Invalid("callback_url must be at most %d bytes", MaxCallbackURLLength)
	}
	return u.String(), nil
}

// checkText trims a text field and bounds it in Unicode characters; required refuses empty.
// Codes: invalid_request.
func checkText(field, raw string, max int, required bool) (string, error) {
	s := strings.TrimSpace(raw)
	if required && s == "" {
		return "", Invalid("%s is required", field)
	}
	if utf8.RuneCountInString(s) > max || strings.ContainsRune(s, 0) {
		return "", Invalid("%s must be at most %d characters", field, max)
	}
	return s, nil
}

// jsonObject returns raw when it is a JSON object, {} when it is absent or null.
// Codes: invalid_request.
func jsonObject(field string, raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	var m map[string]json.RawMessage
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &m) != nil {
		return nil, Invalid("%s must be a JSON object", field)
	}
	return trimmed, nil
}

// liveIntegrations are the ids of an installation's and its bot's live slash commands, event
// subscriptions and bot tokens, read before a revocation so that its counts are of those rows
// alone: under read committed each statement sees what committed since the last, so a token
// minted or a command added meanwhile (the same bot installed again) would otherwise count
// against what the revocation ended.
type liveIntegrations struct{ slash, subs, tokens []string }

func (tx *Tx) liveIntegrationsOf(ctx context.Context, installationID, botID string) (liveIntegrations, error) {
	var l liveIntegrations
	err := tx.queryRow(ctx, `SELECT
		coalesce((SELECT array_agg(id) FROM slash_commands WHERE revoked_at IS NULL AND (app_installation_id = $1 OR bot_user_id = $2)), '{}'),
		coalesce((SELECT array_agg(id) FROM event_subscriptions WHERE revoked_at IS NULL AND (app_installation_id = $1 OR bot_user_id = $2)), '{}'),
		coalesce((SELECT array_agg(id) FROM bot_tokens WHERE revoked_at IS NULL AND (app_installation_id = $1 OR bot_user_id = $2)), '{}')`,
		installationID, botID).Scan(&l.slash, &l.subs, &l.tokens)
	return l, err
}

// revokedOf counts the rows of l this transaction revoked (revoked_at is its clock; a row another
// transaction revoked first has its own).
func (tx *Tx) revokedOf(ctx context.Context, l liveIntegrations) (RevokedCounts, error) {
	var c RevokedCounts
	err := tx.queryRow(ctx, `SELECT
		(SELECT count(*) FROM slash_commands WHERE id = ANY($1) AND revoked_at = $4),
		(SELECT count(*) FROM event_subscriptions WHERE id = ANY($2) AND revoked_at = $4),
		(SELECT count(*) FROM bot_tokens WHERE id = ANY($3) AND revoked_at = $4)`,
		l.slash, l.subs, l.tokens, tx.now).Scan(&c.SlashCommands, &c.EventSubscriptions, &c.BotTokens)
	return c, err
}
