package persist

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Bot-token prefixes: the raw bearer token and the record id.
const (
	PrefixBotToken   = "ccb_"
	PrefixBotTokenID = "btk_"
)

// DefaultTokenName names a token whose request names none.
const DefaultTokenName = "default"

// MaxTokenNameLength bounds token names, in Unicode characters.
const MaxTokenNameLength = 80

// BotToken is a bot's bearer credential, bound to one workspace, with concrete scopes. Token, the
// raw ccb_ value, is set only in the result that created or rotated it; lists never carry it.
type BotToken struct {
	ID          string     `json:"id"`
	BotUserID   string     `json:"bot_user_id"`
	WorkspaceID string     `json:"workspace_id"`
	OwnerUserID string     `json:"owner_user_id,omitempty"`
	Name        string     `json:"name"`
	Scopes      []string   `json:"scopes"`
	CreatedBy   string     `json:"created_by"`
	CreatedAt   time.Time  `json:"created_at"`
	LastUsedAt  *time.Time `json:"last_used_at,omitempty"`
	RevokedAt   *time.Time `json:"revoked_at,omitempty"`
	Token       string     `json:"token,omitempty"`
}

func botTokenColumnsOf(a string) string {
	return fmt.Sprintf(`%[1]sid, %[1]sbot_user_id, %[1]sworkspace_id, coalesce(%[1]sowner_user_id, ''), %[1]sname,
	%[1]sscopes, %[1]screated_by, %[1]screated_at, %[1]slast_used_at, %[1]srevoked_at`, a)
}

var botTokenColumns = botTokenColumnsOf("")

func botTokenDest(t *BotToken) []any {
	return []any{&t.ID, &t.BotUserID, &t.WorkspaceID, &t.OwnerUserID, &t.Name, &t.Scopes, &t.CreatedBy,
		&t.CreatedAt, &t.LastUsedAt, &t.RevokedAt}
}

func scanBotToken(row pgx.Row) (BotToken, error) {
	var t BotToken
	err := row.Scan(botTokenDest(&t)...)
	return t, err
}

func scanBotTokens(rows pgx.Rows, err error) ([]BotToken, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []BotToken{}
	for rows.Next() {
		var t BotToken
		if err := rows.Scan(botTokenDest(&t)...); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// normalizeTokenName trims a token name; empty gives DefaultTokenName. Codes: invalid_request.
func normalizeTokenName(raw string) (string, error) {
	name := strings.TrimSpace(raw)
	if name == "" {
		return DefaultTokenName, nil
	}
	if utf8.RuneCountInString(name) > MaxTokenNameLength {
		return "", Invalid("the token name must be at most %d characters", MaxTokenNameLength)
	}
	return name, nil
}

// botTokenInsert mints a token for bot in workspaceID with concrete scopes. It checks nothing:
// its callers authorize first.
func (tx *Tx) botTokenInsert(ctx context.Context, bot User, workspaceID, name string, scopes []string, createdBy string) (BotToken, error) {
	raw, hash := NewSecret(PrefixBotToken)
	t, err := scanBotToken(tx.queryRow(ctx, `
		INSERT INTO bot_tokens (id, token_hash, bot_user_id, workspace_id, owner_user_id, name, scopes, created_by, created_at)
		VALUES ($1, $2, $3, $4, nullif($5, ''), $6, $7, $8, $9)
		RETURNING `+botTokenColumns,
		NewID(PrefixBotTokenID, tx.now), hash, bot.ID, workspaceID, bot.OwnerUserID, name, scopes, createdBy, tx.now))
	t.Token = raw
	return t, err
}

// BotTokenParams are the fields of a token request.
type BotTokenParams struct {
	Name   string   // default DefaultTokenName
	Scopes []string // scopes and bundles; default DefaultScopes
}

// BotTokenCreate mints a token for botID bound to workspaceID, or to the bot's only workspace
// when workspaceID is "" (the legacy routes). The actor must be the owner of a user bot, or an
// owner or moderator for a service bot. Codes: invalid_request, not_found (workspace or bot),
// forbidden, conflict (legacy: the bot is in several workspaces).
func (tx *Tx) BotTokenCreate(ctx context.Context, actor Actor, workspaceID, botID string, p BotTokenParams) (BotToken, error) {
	workspaceID, err := tx.botWorkspace(ctx, actor, workspaceID, botID)
	if err != nil {
		return BotToken{}, err
	}
	bot, err := tx.requireBotManager(ctx, actor, workspaceID, botID)
	if err != nil {
		return BotToken{}, err
	}
	name, err := normalizeTokenName(p.Name)
	if err != nil {
		return BotToken{}, err
	}
	scopes, err := ExpandScopes(p.Scopes)
	if err != nil {
		return BotToken{}, err
	}
	return tx.botTokenInsert(ctx, bot, workspaceID, name, scopes, actor.UserID)
}

// BotTokenList returns the redacted tokens of botID bound to workspaceID (or to its only
// workspace when workspaceID is ""), newest first, revoked ones included. Any member but a guest
// may list. Codes: not_found, forbidden, conflict (as BotTokenCreate).
func (tx *Tx) BotTokenList(ctx context.Context, actor Actor, workspaceID, botID string) ([]BotToken, error) {
	workspaceID, err := tx.botWorkspace(ctx, actor, workspaceID, botID)
	if err != nil {
		return nil, err
	}
	if _, err := tx.requireBotViewer(ctx, actor, workspaceID); err != nil {
		return nil, err
	}
	if _, err := tx.workspaceBot(ctx, workspaceID, botID); err != nil {
		return nil, err
	}
	return scanBotTokens(tx.query(ctx, `SELECT `+botTokenColumns+` FROM bot_tokens
		WHERE workspace_id = $1 AND bot_user_id = $2 ORDER BY created_at DESC, id DESC`, workspaceID, botID))
}

// BotTokenAuthenticate resolves a raw ccb_ token to its live record and bot, and records the use
// (last_used_at). Unknown and revoked tokens, and tokens of deleted bots, give unauthenticated.
// Membership and the owner rule are checked per workspace by the operations themselves.
func (tx *Tx) BotTokenAuthenticate(ctx context.Context, raw string) (BotToken, User, error) {
	return tx.botTokenAuthenticate(ctx, raw, false)
}

// BotTokenAuthenticate is Tx.BotTokenAuthenticate on its own, for a request's authentication:
// one statement outside any transaction, one round trip, and a commit that does not wait for the
// disk (relaxedCommit). What it writes is only the time of the use: one lost in a crash leaves
// last_used_at a little older. Before, every request of a bot was a transaction of three round
// trips that flushed the WAL.
func (s *Store) BotTokenAuthenticate(ctx context.Context, raw string) (BotToken, User, error) {
	t, u, err := s.poolReader().botTokenAuthenticate(ctx, raw, true)
	return t, u, translate(err)
}

// botTokenAuthenticate is the one statement of both; relaxed adds relaxedCommit.
//
// The use is recorded to the second: a use within a second of the recorded one leaves the row
// alone. A runtime's requests all carry one token, and writing its row on each of them queued
// them on the row's lock (and left a dead row version each) for a time nobody reads closer
// than that.
func (tx *Reader) botTokenAuthenticate(ctx context.Context, raw string, relaxed bool) (BotToken, User, error) {
	var t BotToken
	var u User
	var recorded bool
	ctes, from := "", "tok"
	if relaxed {
		ctes, from = relaxedCommit+", ", "tok, relaxed"
	}
	err := tx.queryRow(ctx, `WITH `+ctes+`tok AS (
			SELECT t.id FROM bot_tokens t JOIN users u ON u.id = t.bot_user_id
			WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND u.deleted_at IS NULL),
		used AS (
			UPDATE bot_tokens t SET last_used_at = $2 FROM `+from+`
			WHERE t.id = tok.id AND (t.last_used_at IS NULL OR t.last_used_at <= $2::timestamptz - interval '1 second')
			RETURNING t.id)
		SELECT `+botTokenColumnsOf("t.")+`, `+userColumnsOf("u.")+`, used.id IS NOT NULL
		FROM tok JOIN bot_tokens t ON t.id = tok.id JOIN users u ON u.id = t.bot_user_id
			LEFT JOIN used ON used.id = t.id`,
		HashSecret(raw), tx.now).Scan(append(append(botTokenDest(&t), userDest(&u)...), &recorded)...)
	if err != nil {
		if e := notFoundAs(err, "token"); e != err {
			return BotToken{}, User{}, Errorf(CodeUnauthenticated, "the bot token is unknown or revoked")
		}
		return BotToken{}, User{}, err
	}
	if recorded {
		now := tx.now
		t.LastUsedAt = &now
	}
	return t, u, nil
}

// BotTokenLive reports whether a token still authenticates: not revoked, its bot not deleted. Open
// sockets and NATS connections recheck with it; unlike BotTokenAuthenticate it records no use.
func (tx *Reader) BotTokenLive(ctx context.Context, id string) (bool, error) {
	var live bool
	err := tx.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM bot_tokens t JOIN users u ON u.id = t.bot_user_id
		WHERE t.id = $1 AND t.revoked_at IS NULL AND u.deleted_at IS NULL)`, id).Scan(&live)
	return live, err
}

// BotTokenRevoke revokes a token; revoking a revoked token returns it unchanged. The owner of a
// user bot, or an owner or moderator of the token's workspace for a service bot, may revoke.
// Codes: not_found, forbidden.
func (tx *Tx) BotTokenRevoke(ctx context.Context, actor Actor, tokenID string) (BotToken, error) {
	if err := requireHumanActor(actor); err != nil {
		return BotToken{}, err
	}
	t, err := scanBotToken(tx.queryRow(ctx, `SELECT `+botTokenColumns+` FROM bot_tokens WHERE id = $1 FOR UPDATE`, tokenID))
	if err != nil {
		return BotToken{}, notFoundAs(err, "bot token")
	}
	bot, err := tx.UserGet(ctx, t.BotUserID)
	if err != nil {
		return BotToken{}, err
	}
	if bot.OwnerUserID != actor.UserID {
		m, err := tx.requireMember(ctx, t.WorkspaceID, actor)
		if err != nil {
			return BotToken{}, err
		}
		if err := mayManageBot(actor, m, bot); err != nil {
			return BotToken{}, err
		}
	}
	if t.RevokedAt != nil {
		return t, nil
	}
	tx.noteRevoked(Revocation{TokenID: t.ID})
	return scanBotToken(tx.queryRow(ctx, `UPDATE bot_tokens SET revoked_at = $3
		WHERE workspace_id = $1 AND id = $2 RETURNING `+botTokenColumns, t.WorkspaceID, t.ID, tx.now))
}

// botWorkspace returns workspaceID, or when it is "" the only workspace botID belongs to (the
// legacy token routes serve single-workspace bots only). A bot in several workspaces is a
// conflict for those who share one of them and not found for everyone else.
// Codes: not_found, conflict.
func (tx *Tx) botWorkspace(ctx context.Context, actor Actor, workspaceID, botID string) (string, error) {
	if workspaceID != "" {
		return workspaceID, nil
	}
	rows, err := tx.query(ctx, `
		SELECT m.workspace_id, EXISTS (SELECT 1 FROM workspace_members a WHERE a.workspace_id = m.workspace_id AND a.user_id = $2)
		FROM workspace_members m JOIN users u ON u.id = m.user_id
		WHERE m.user_id = $1 AND u.kind = 'bot' AND u.deleted_at IS NULL
		ORDER BY m.workspace_id`, botID, actor.UserID)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var all []string
	shared := false
	for rows.Next() {
		var id string
		var mine bool
		if err := rows.Scan(&id, &mine); err != nil {
			return "", err
		}
		all = append(all, id)
		shared = shared || mine
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	switch {
	case len(all) == 1:
		return all[0], nil
	case len(all) > 1 && shared:
		return "", Conflict("this bot belongs to %d workspaces; use /api/workspaces/{workspace_id}/bots/{bot_user_id}/tokens", len(all))
	default:
		return "", NotFound("bot")
	}
}
