package persist

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
)

// PrefixSetupCode prefixes setup-code record ids.
const PrefixSetupCode = "bsc_"

// SetupCodeLifetime is how long a setup code may be claimed.
const SetupCodeLifetime = 10 * time.Minute

// setupCodeAlphabet has 32 letters and digits without the look-alikes 0, O, 1 and I: a byte
// modulo 32 picks one without bias, and twelve of them carry 60 bits.
const setupCodeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// Limits of setup-code defaults.
const (
	MaxDefaultToLength  = 256
	MaxAllowFromEntries = 500
)

// SetupDefaults are the installer hints a setup code carries to its claim: defaultTo (an outbound
// target such as channel:general), allowFrom (an inbound sender allow-list) and agentActivity.
// Names are camelCase: the shape agent runtimes read.
type SetupDefaults struct {
	DefaultTo     string   `json:"defaultTo,omitempty"`
	AllowFrom     []string `json:"allowFrom,omitempty"`
	AgentActivity *bool    `json:"agentActivity,omitempty"`
}

// SetupCode is a pending token grant. Code, the plaintext XXXX-XXXX-XXXX, is set only in the
// result that minted it; the store keeps its SHA-256.
type SetupCode struct {
	ID          string        `json:"id"`
	BotUserID   string        `json:"bot_user_id"`
	WorkspaceID string        `json:"workspace_id"`
	TokenName   string        `json:"token_name"`
	Scopes      []string      `json:"scopes"`
	Defaults    SetupDefaults `json:"defaults"`
	CreatedBy   string        `json:"created_by"`
	CreatedAt   time.Time     `json:"created_at"`
	ExpiresAt   time.Time     `json:"expires_at"`
	Code        string        `json:"code,omitempty"`
}

// SetupCodeParams are the fields of a setup-code request.
type SetupCodeParams struct {
	Name     string   // the token name the claim will use; default DefaultTokenName
	Scopes   []string // scopes and bundles, expanded now; default DefaultScopes
	Defaults SetupDefaults
}

// newSetupCode returns a random code in its canonical XXXX-XXXX-XXXX form.
func newSetupCode() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	var sb strings.Builder
	for i, c := range b {
		if i > 0 && i%4 == 0 {
			sb.WriteByte('-')
		}
		sb.WriteByte(setupCodeAlphabet[int(c)%len(setupCodeAlphabet)])
	}
	return sb.String()
}

// NormalizeSetupCode reads a code as people type it: any case, separators and spaces ignored. It
// returns the canonical form, or false when the input cannot be a code.
func NormalizeSetupCode(raw string) (string, bool) {
	var chars []byte
	for _, r := range strings.ToUpper(raw) {
		switch {
		case r == '-' || r == ' ' || r == '\t':
		case r < utf8.RuneSelf && strings.IndexByte(setupCodeAlphabet, byte(r)) >= 0:
			chars = append(chars, byte(r))
		default:
			return "", false
		}
	}
	if len(chars) != 12 {
		return "", false
	}
	return string(chars[0:4]) + "-" + string(chars[4:8]) + "-" + string(chars[8:12]), true
}

// validate checks the defaults against the code's concrete scopes. Codes: invalid_request.
func (d SetupDefaults) validate(scopes []string) error {
	if utf8.RuneCountInString(d.DefaultTo) > MaxDefaultToLength {
		return Invalid("defaults.defaultTo must be at most %d characters", MaxDefaultToLength)
	}
	if len(d.AllowFrom) > MaxAllowFromEntries {
		return Invalid("defaults.allowFrom may hold at most %d entries", MaxAllowFromEntries)
	}
	for _, a := range d.AllowFrom {
		if utf8.RuneCountInString(a) > MaxDefaultToLength {
			return Invalid("each defaults.allowFrom entry must be at most %d characters", MaxDefaultToLength)
		}
	}
	if d.AgentActivity != nil && *d.AgentActivity && !(Actor{Scopes: scopes}).HasScope(ScopeAgentActivityWrite) {
		return Invalid("defaults.agentActivity needs the %s scope", ScopeAgentActivityWrite)
	}
	return nil
}

// BotSetupCodeCreate mints a setup code for botID in workspaceID, replacing a pending code of the
// same bot and token name. Authority is that of token minting (see BotTokenCreate); no token
// exists until the code is claimed. Codes: invalid_request, not_found, forbidden.
func (tx *Tx) BotSetupCodeCreate(ctx context.Context, actor Actor, workspaceID, botID string, p SetupCodeParams) (SetupCode, error) {
	bot, err := tx.requireBotManager(ctx, actor, workspaceID, botID)
	if err != nil {
		return SetupCode{}, err
	}
	name, err := normalizeTokenName(p.Name)
	if err != nil {
		return SetupCode{}, err
	}
	scopes, err := ExpandScopes(p.Scopes)
	if err != nil {
		return SetupCode{}, err
	}
	p.Defaults.DefaultTo = strings.TrimSpace(p.Defaults.DefaultTo)
	if err := p.Defaults.validate(scopes); err != nil {
		return SetupCode{}, err
	}
	defaults, err := json.Marshal(p.Defaults)
	if err != nil {
		return SetupCode{}, err
	}
	// The bot's row lock queues concurrent mints, so one pending code per name survives.
	if _, err := tx.exec(ctx, `SELECT 1 FROM users WHERE id = $1 FOR UPDATE`, bot.ID); err != nil {
		return SetupCode{}, err
	}
	if _, err := tx.exec(ctx, `DELETE FROM bot_setup_codes
		WHERE bot_user_id = $1 AND token_name = $2 AND consumed_at IS NULL`, bot.ID, name); err != nil {
		return SetupCode{}, err
	}
	code := newSetupCode()
	c := SetupCode{ID: NewID(PrefixSetupCode, tx.now), BotUserID: bot.ID, WorkspaceID: workspaceID, TokenName: name,
		Scopes: scopes, Defaults: p.Defaults, CreatedBy: actor.UserID, CreatedAt: tx.now,
		ExpiresAt: tx.now.Add(SetupCodeLifetime), Code: code}
	if _, err := tx.exec(ctx, `INSERT INTO bot_setup_codes (id, code_hash, workspace_id, bot_user_id, token_name, scopes,
			defaults, created_by, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		c.ID, HashSecret(code), workspaceID, bot.ID, name, scopes, string(defaults), actor.UserID, c.CreatedAt, c.ExpiresAt); err != nil {
		return SetupCode{}, err
	}
	return c, nil
}

// SetupClaim is what claiming a setup code gives the installer.
type SetupClaim struct {
	Token     BotToken // with its raw value
	Bot       User
	Workspace Workspace
	Defaults  SetupDefaults
}

// errSetupCodeGone is the one answer for unknown, expired, claimed and invalidated codes, so a
// caller learns nothing from the difference.
func errSetupCodeGone() error {
	return NotFound("setup code")
}

// BotSetupCodeClaim consumes a pending code and mints its token in the same transaction. Defaults
// without a defaultTo suggest the workspace's active default channel: #general when it is live,
// else the oldest live channel other than the guest room. Codes: not_found (the same for an
// unknown, expired, already claimed or invalidated code, or a bot that can no longer act there).
func (tx *Tx) BotSetupCodeClaim(ctx context.Context, raw string) (SetupClaim, error) {
	code, ok := NormalizeSetupCode(raw)
	if !ok {
		return SetupClaim{}, errSetupCodeGone()
	}
	var c SetupCode
	var defaults []byte
	err := tx.queryRow(ctx, `UPDATE bot_setup_codes SET consumed_at = $2
		WHERE code_hash = $1 AND consumed_at IS NULL AND expires_at > $2
		RETURNING id, workspace_id, bot_user_id, token_name, scopes, defaults::text, created_by`,
		HashSecret(code), tx.now).Scan(&c.ID, &c.WorkspaceID, &c.BotUserID, &c.TokenName, &c.Scopes, &defaults, &c.CreatedBy)
	if err != nil {
		if e := notFoundAs(err, "setup code"); e != err {
			return SetupClaim{}, errSetupCodeGone()
		}
		return SetupClaim{}, err
	}
	if err := json.Unmarshal(defaults, &c.Defaults); err != nil {
		return SetupClaim{}, err
	}
	bot, err := tx.workspaceBot(ctx, c.WorkspaceID, c.BotUserID)
	if err != nil {
		return SetupClaim{}, errSetupCodeGone()
	}
	if _, err := tx.requireMember(ctx, c.WorkspaceID, BotActor(BotToken{WorkspaceID: c.WorkspaceID, CreatedBy: c.CreatedBy}, bot)); err != nil {
		return SetupClaim{}, errSetupCodeGone()
	}
	w, err := tx.WorkspaceGet(ctx, c.WorkspaceID)
	if err != nil {
		return SetupClaim{}, err
	}
	if c.Defaults.DefaultTo == "" {
		var name string
		err := tx.queryRow(ctx, `SELECT name FROM channels
			WHERE workspace_id = $1 AND archived_at IS NULL AND name <> $2 AND visibility = 'public'
			ORDER BY name = $3 DESC, created_at, id LIMIT 1`, c.WorkspaceID, GuestChannel, DevChannel).Scan(&name)
		if err == nil {
			c.Defaults.DefaultTo = "channel:" + name
		} else if e := notFoundAs(err, "channel"); e == err {
			return SetupClaim{}, err
		}
	}
	t, err := tx.botTokenInsert(ctx, bot, c.WorkspaceID, c.TokenName, c.Scopes, c.CreatedBy)
	if err != nil {
		return SetupClaim{}, err
	}
	if _, err := tx.exec(ctx, `UPDATE bot_setup_codes SET token_id = $3 WHERE workspace_id = $1 AND id = $2`,
		c.WorkspaceID, c.ID, t.ID); err != nil {
		return SetupClaim{}, err
	}
	return SetupClaim{Token: t, Bot: bot, Workspace: w, Defaults: c.Defaults}, nil
}
