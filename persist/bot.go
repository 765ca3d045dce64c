package persist

import (
	"context"
	"time"
)

// Bot setup nonces (retry keys of bot creation) are 16 to 128 characters.
const (
	MinSetupNonceLength = 16
	MaxSetupNonceLength = 128
)

// requireHumanActor refuses bots: bot tokens never create, list, mint or revoke bot credentials.
// The route table refuses them first; this is the store's own guard. Codes: forbidden.
func requireHumanActor(a Actor) error {
	if a.IsBotToken() || a.Kind == KindBot {
		return Forbidden("bot tokens cannot manage bots or their tokens")
	}
	return nil
}

// workspaceBot returns a live bot that is a member of workspaceID, locking the membership row.
// Codes: not_found.
func (tx *Tx) workspaceBot(ctx context.Context, workspaceID, botID string) (User, error) {
	u, err := scanUser(tx.queryRow(ctx, `SELECT `+userColumnsOf("u.")+`
		FROM workspace_members m JOIN users u ON u.id = m.user_id
		WHERE m.workspace_id = $1 AND m.user_id = $2 AND u.kind = 'bot' AND u.deleted_at IS NULL
		FOR SHARE OF m`, workspaceID, botID))
	return u, notFoundAs(err, "bot")
}

// mayManageBot is rule 6 of §Bots: a user bot's credentials belong to its owner alone (managers
// cannot mint or rotate for another person's bot); a service bot's to the workspace's owners and
// moderators. Codes: forbidden.
func mayManageBot(actor Actor, m Member, bot User) error {
	if bot.OwnerUserID != "" {
		if actor.UserID != bot.OwnerUserID {
			return Forbidden("only the owner of a user bot manages its tokens and setup codes")
		}
		return nil
	}
	return requireManager(m)
}

// requireBotManager returns botID, a bot member of workspaceID, when actor may manage its
// credentials there (see mayManageBot) and may write in the workspace now (not in the waiting
// room, timed out or blocked). Codes: not_found, forbidden.
func (tx *Tx) requireBotManager(ctx context.Context, actor Actor, workspaceID, botID string) (User, error) {
	if err := requireHumanActor(actor); err != nil {
		return User{}, err
	}
	m, err := tx.requireMember(ctx, workspaceID, actor)
	if err != nil {
		return User{}, err
	}
	bot, err := tx.workspaceBot(ctx, workspaceID, botID)
	if err != nil {
		return User{}, err
	}
	if err := mayManageBot(actor, m, bot); err != nil {
		return User{}, err
	}
	return bot, tx.requireFullWriter(ctx, m, "manage bots")
}

// requireBotViewer admits the humans who may see a workspace's bots and their redacted tokens:
// members other than waiting-room guests. Codes: not_found, forbidden.
func (tx *Tx) requireBotViewer(ctx context.Context, actor Actor, workspaceID string) (Member, error) {
	if err := requireHumanActor(actor); err != nil {
		return Member{}, err
	}
	m, err := tx.requireMemberToRead(ctx, workspaceID, actor)
	if err != nil {
		return Member{}, err
	}
	if m.Role == RoleGuest {
		return Member{}, Forbidden("guests cannot see the workspace's bots")
	}
	return m, nil
}

// BotCreateParams are the fields of a new bot.
type BotCreateParams struct {
	OwnerUserID  string // a user bot's owner, who must be the actor; "" for a service bot
	DisplayName  string
	Handle       string
	AvatarURL    string
	InitialToken bool     // mint a first token with TokenName and Scopes
	TokenName    string   // default DefaultTokenName
	Scopes       []string // scopes and bundles; default DefaultScopes
	SetupNonce   string   // optional retry key, 16-128 characters
}

// BotCreated is what BotCreate made or found.
type BotCreated struct {
	Bot User
	// Token is the minted (or, on a replay, rotated) token with its raw value; nil without
	// InitialToken.
	Token *BotToken
	// Replayed says a setup nonce matched an earlier creation: nothing new was created.
	Replayed bool
}

// BotCreate creates a bot in workspaceID, a member with role bot, and optionally its first token
// (rule 6 of §Bots: a service bot needs an owner or moderator; a user bot is created by its
// owner, a member who is not a guest; neither while timed out or blocked). With a setup nonce already used by the actor in this
// workspace it creates nothing: a tokenless replay returns the same bot, a token replay reuses
// the same token row with a fresh secret, so earlier unconfirmed secrets stop working (rule 1).
// Codes: invalid_request, not_found (workspace), forbidden, conflict (handle taken, or the
// nonce's bot was deleted or removed).
func (tx *Tx) BotCreate(ctx context.Context, actor Actor, workspaceID string, p BotCreateParams) (BotCreated, error) {
	if err := requireHumanActor(actor); err != nil {
		return BotCreated{}, err
	}
	m, err := tx.requireMember(ctx, workspaceID, actor)
	if err != nil {
		return BotCreated{}, err
	}
	switch {
	case p.OwnerUserID != "" && p.OwnerUserID != actor.UserID:
		return BotCreated{}, Forbidden("a user bot is created by its owner: owner_user_id must be your own id")
	case p.OwnerUserID != "":
		err = tx.requireFullWriter(ctx, m, "create bots")
	default:
		err = tx.requireManagerWriter(ctx, m)
	}
	if err != nil {
		return BotCreated{}, err
	}
	var name string
	var scopes []string
	if p.InitialToken {
		if name, err = normalizeTokenName(p.TokenName); err != nil {
			return BotCreated{}, err
		}
		if scopes, err = ExpandScopes(p.Scopes); err != nil {
			return BotCreated{}, err
		}
	}
	var nonceHash []byte
	if p.SetupNonce != "" {
		if n := len(p.SetupNonce); n < MinSetupNonceLength || n > MaxSetupNonceLength {
			return BotCreated{}, Invalid("setup_nonce must be %d to %d characters", MinSetupNonceLength, MaxSetupNonceLength)
		}
		nonceHash = HashSecret(p.SetupNonce)
		// Concurrent replays of one nonce queue here, so exactly one of them creates the bot.
		if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1::text || ':' || $2::text || ':' || encode($3::bytea, 'hex'), 0))`,
			workspaceID, actor.UserID, nonceHash); err != nil {
			return BotCreated{}, err
		}
		var botID, tokenID string
		err := tx.queryRow(ctx, `SELECT bot_user_id, coalesce(token_id, '') FROM bot_setup_nonces
			WHERE workspace_id = $1 AND created_by = $2 AND nonce_hash = $3`, workspaceID, actor.UserID, nonceHash).Scan(&botID, &tokenID)
		if err == nil {
			return tx.botCreateReplay(ctx, actor, workspaceID, nonceHash, botID, tokenID, name, scopes, p.InitialToken)
		}
		if e := notFoundAs(err, "nonce"); e == err {
			return BotCreated{}, err
		}
	}
	bot, err := tx.UserCreate(ctx, UserCreateParams{Kind: KindBot, OwnerUserID: p.OwnerUserID,
		DisplayName: p.DisplayName, Handle: p.Handle, AvatarURL: p.AvatarURL})
	if err != nil {
		return BotCreated{}, err
	}
	if _, err := tx.exec(ctx, `INSERT INTO bots (user_id, workspace_id, created_by, created_at) VALUES ($1, $2, $3, $4)`,
		bot.ID, workspaceID, actor.UserID, tx.now); err != nil {
		return BotCreated{}, err
	}
	if _, err := tx.MemberAdd(ctx, workspaceID, bot.ID, RoleBot); err != nil {
		return BotCreated{}, err
	}
	out := BotCreated{Bot: bot}
	if p.InitialToken {
		t, err := tx.botTokenInsert(ctx, bot, workspaceID, name, scopes, actor.UserID)
		if err != nil {
			return BotCreated{}, err
		}
		out.Token = &t
	}
	if nonceHash != nil {
		tokenID := ""
		if out.Token != nil {
			tokenID = out.Token.ID
		}
		if _, err := tx.exec(ctx, `INSERT INTO bot_setup_nonces (workspace_id, created_by, nonce_hash, bot_user_id, token_id, created_at)
			VALUES ($1, $2, $3, $4, nullif($5, ''), $6)`, workspaceID, actor.UserID, nonceHash, bot.ID, tokenID, tx.now); err != nil {
			return BotCreated{}, err
		}
	}
	return out, nil
}

// botCreateReplay answers a repeated setup nonce: the same bot, and in token mode the same token
// row under a new secret (a new row when the old one was revoked meanwhile).
func (tx *Tx) botCreateReplay(ctx context.Context, actor Actor, workspaceID string, nonceHash []byte, botID, tokenID, name string,
	scopes []string, initialToken bool) (BotCreated, error) {
	bot, err := tx.workspaceBot(ctx, workspaceID, botID)
	if err != nil {
		return BotCreated{}, Conflict("the bot this setup_nonce created has been deleted or removed from the workspace; use a new setup_nonce")
	}
	out := BotCreated{Bot: bot, Replayed: true}
	if !initialToken {
		return out, nil
	}
	if tokenID != "" {
		raw, hash := NewSecret(PrefixBotToken)
		t, err := scanBotToken(tx.queryRow(ctx, `UPDATE bot_tokens SET token_hash = $3
			WHERE workspace_id = $1 AND id = $2 AND revoked_at IS NULL RETURNING `+botTokenColumns, workspaceID, tokenID, hash))
		if err == nil {
			t.Token = raw
			out.Token = &t
			return out, nil
		}
		if e := notFoundAs(err, "token"); e == err {
			return BotCreated{}, err
		}
	}
	t, err := tx.botTokenInsert(ctx, bot, workspaceID, name, scopes, actor.UserID)
	if err != nil {
		return BotCreated{}, err
	}
	if _, err := tx.exec(ctx, `UPDATE bot_setup_nonces SET token_id = $4
		WHERE workspace_id = $1 AND created_by = $2 AND nonce_hash = $3`, workspaceID, actor.UserID, nonceHash, t.ID); err != nil {
		return BotCreated{}, err
	}
	out.Token = &t
	return out, nil
}

// BotWithTokens is a workspace's bot with its redacted tokens for that workspace.
type BotWithTokens struct {
	Bot    PublicUser `json:"bot"`
	Tokens []BotToken `json:"tokens"`
}

// BotListByWorkspace returns the live bots of a workspace, by handle, with their redacted tokens
// there (revoked ones included, newest first). Members other than guests may list.
// Codes: not_found, forbidden.
func (tx *Tx) BotListByWorkspace(ctx context.Context, actor Actor, workspaceID string) ([]BotWithTokens, error) {
	if _, err := tx.requireBotViewer(ctx, actor, workspaceID); err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, `SELECT `+userColumnsOf("u.")+`
		FROM workspace_members m JOIN users u ON u.id = m.user_id
		WHERE m.workspace_id = $1 AND u.kind = 'bot' AND u.deleted_at IS NULL
		ORDER BY u.handle NULLS LAST, u.id`, workspaceID)
	if err != nil {
		return nil, err
	}
	out := []BotWithTokens{}
	index := map[string]int{}
	for rows.Next() {
		var u User
		if err := rows.Scan(userDest(&u)...); err != nil {
			rows.Close()
			return nil, err
		}
		index[u.ID] = len(out)
		out = append(out, BotWithTokens{Bot: u.Public(), Tokens: []BotToken{}})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	tokens, err := scanBotTokens(tx.query(ctx, `SELECT `+botTokenColumnsOf("t.")+`
		FROM bot_tokens t WHERE t.workspace_id = $1 ORDER BY t.created_at DESC, t.id DESC`, workspaceID))
	if err != nil {
		return nil, err
	}
	for _, t := range tokens {
		if i, ok := index[t.BotUserID]; ok {
			out[i].Tokens = append(out[i].Tokens, t)
		}
	}
	return out, nil
}

// OwnedBot is one of the caller's user bots in one of its workspaces (GET /api/me/bots).
// Workspace is absent for a bot that belongs to no workspace any more.
type OwnedBot struct {
	Bot              PublicUser     `json:"bot"`
	Workspace        *OwnedBotPlace `json:"workspace,omitempty"`
	ActiveTokenCount int            `json:"active_token_count"`
}

// OwnedBotPlace names the workspace of an OwnedBot.
type OwnedBotPlace struct {
	ID      string `json:"id"`
	RouteID string `json:"route_id"`
	Name    string `json:"name"`
}

// BotListOwned returns ownerID's live user bots, one entry per workspace each belongs to, with
// the count of its active tokens there.
func (tx *Tx) BotListOwned(ctx context.Context, ownerID string) ([]OwnedBot, error) {
	rows, err := tx.query(ctx, `SELECT `+userColumnsOf("u.")+`, coalesce(w.id, ''), coalesce(w.route_id, ''), coalesce(w.name, ''),
			(SELECT count(*) FROM bot_tokens t WHERE t.workspace_id = w.id AND t.bot_user_id = u.id AND t.revoked_at IS NULL)
		FROM users u
		LEFT JOIN workspace_members m ON m.user_id = u.id
		LEFT JOIN workspaces w ON w.id = m.workspace_id
		WHERE u.owner_user_id = $1 AND u.kind = 'bot' AND u.deleted_at IS NULL
		ORDER BY u.handle NULLS LAST, u.id, w.name, w.id`, ownerID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []OwnedBot{}
	for rows.Next() {
		var u User
		var place OwnedBotPlace
		var count int
		if err := rows.Scan(append(userDest(&u), &place.ID, &place.RouteID, &place.Name, &count)...); err != nil {
			return nil, err
		}
		entry := OwnedBot{Bot: u.Public(), ActiveTokenCount: count}
		if place.ID != "" {
			entry.Workspace = &place
		}
		out = append(out, entry)
	}
	return out, rows.Err()
}

// BotMembershipRemove takes botID out of workspaceID in one transaction: its tokens for that
// workspace are revoked, its command menu there deleted and its pending setup codes there
// invalidated; the bot itself stays. The actor must be an owner or moderator.
// Codes: not_found (workspace, or the bot is not a member), forbidden.
func (tx *Tx) BotMembershipRemove(ctx context.Context, actor Actor, workspaceID, botID string) error {
	if err := requireHumanActor(actor); err != nil {
		return err
	}
	m, err := tx.requireMember(ctx, workspaceID, actor)
	if err != nil {
		return err
	}
	if err := tx.requireManagerWriter(ctx, m); err != nil {
		return err
	}
	if _, err := tx.workspaceBot(ctx, workspaceID, botID); err != nil {
		return err
	}
	return tx.botLeave(ctx, workspaceID, botID)
}

// botLeave revokes everything botID holds in workspaceID and ends its membership there. It
// checks nothing. Resources that belong to a bot in a workspace are revoked here too, so
// membership removal and bot deletion cover them: its app installations, the slash commands and
// event subscriptions it serves or that belong to those installations, and the connected
// accounts bound to it (each with an audit entry).
func (tx *Tx) botLeave(ctx context.Context, workspaceID, botID string) error {
	// The membership's exclusive lock waits out every operation that holds it shared (token and
	// code minting, claims, menus), so none of them leaves something live behind.
	if _, err := tx.exec(ctx, `SELECT 1 FROM workspace_members WHERE workspace_id = $1 AND user_id = $2 FOR UPDATE`,
		workspaceID, botID); err != nil {
		return err
	}
	if _, err := tx.exec(ctx, `UPDATE bot_tokens SET revoked_at = $3
		WHERE workspace_id = $1 AND bot_user_id = $2 AND revoked_at IS NULL`, workspaceID, botID, tx.now); err != nil {
		return err
	}
	tx.noteMembershipChanged(workspaceID, botID)
	if err := tx.botIntegrationsRevoke(ctx, workspaceID, botID); err != nil {
		return err
	}
	for _, stmt := range []string{
		`DELETE FROM bot_commands WHERE workspace_id = $1 AND bot_user_id = $2`,
		`DELETE FROM bot_setup_codes WHERE workspace_id = $1 AND bot_user_id = $2 AND consumed_at IS NULL`,
		`DELETE FROM channel_members WHERE workspace_id = $1 AND user_id = $2`,
		`DELETE FROM workspace_members WHERE workspace_id = $1 AND user_id = $2`,
	} {
		if _, err := tx.exec(ctx, stmt, workspaceID, botID); err != nil {
			return err
		}
	}
	return nil
}

// DeletedBot is the tombstone BotDelete answers with.
type DeletedBot struct {
	ID           string    `json:"id"`
	DisplayName  string    `json:"display_name"`
	FormerHandle string    `json:"former_handle,omitempty"`
	DeletedAt    time.Time `json:"deleted_at"`
}

// BotDelete retires a bot for good (rule 7 of §Bots). A user bot is deleted by its owner only. A
// service bot needs an owner or moderator of every workspace where it still has active resources
// (membership, live tokens, pending setup codes, a command menu); for a bot with none left, of
// every workspace in its history (tokens, creation, direct conversations). Everything is revoked
// in this one transaction, the handle is released (kept as former_handle) and the id is never
// reused. Codes: not_found (no live bot: unknown, a human, or already deleted), forbidden.
func (tx *Tx) BotDelete(ctx context.Context, actor Actor, botID string) (DeletedBot, error) {
	if err := requireHumanActor(actor); err != nil {
		return DeletedBot{}, err
	}
	bot, err := scanUser(tx.queryRow(ctx, `SELECT `+userColumns+` FROM users
		WHERE id = $1 AND kind = 'bot' AND deleted_at IS NULL FOR UPDATE`, botID))
	if err != nil {
		return DeletedBot{}, notFoundAs(err, "bot")
	}
	active, err := tx.botWorkspaces(ctx, botActiveWorkspacesSQL, botID, tx.now)
	if err != nil {
		return DeletedBot{}, err
	}
	if bot.OwnerUserID != "" {
		if actor.UserID != bot.OwnerUserID {
			return DeletedBot{}, Forbidden("only the owner of a user bot can delete it")
		}
	} else {
		vouching := active
		if len(vouching) == 0 {
			if vouching, err = tx.botWorkspaces(ctx, botHistoryWorkspacesSQL, botID); err != nil {
				return DeletedBot{}, err
			}
		}
		var unmanaged int
		if err := tx.queryRow(ctx, `SELECT count(*) FROM unnest($2::text[]) AS w(id)
			WHERE NOT EXISTS (SELECT 1 FROM workspace_members m
				WHERE m.workspace_id = w.id AND m.user_id = $1 AND m.role IN ('owner', 'moderator'))`,
			actor.UserID, vouching).Scan(&unmanaged); err != nil {
			return DeletedBot{}, err
		}
		if len(vouching) == 0 || unmanaged > 0 {
			return DeletedBot{}, Forbidden("deleting this service bot needs an owner or moderator of every workspace where it is active")
		}
	}
	return tx.botRetire(ctx, bot, active)
}

// botActiveWorkspacesSQL lists the workspaces where a bot ($1) still holds something live at $2.
const botActiveWorkspacesSQL = `
	SELECT workspace_id FROM workspace_members WHERE user_id = $1
	UNION SELECT workspace_id FROM bot_tokens WHERE bot_user_id = $1 AND revoked_at IS NULL
	UNION SELECT workspace_id FROM bot_setup_codes WHERE bot_user_id = $1 AND consumed_at IS NULL AND expires_at > $2
	UNION SELECT workspace_id FROM bot_commands WHERE bot_user_id = $1
	UNION SELECT workspace_id FROM app_installations WHERE bot_user_id = $1 AND revoked_at IS NULL
	UNION SELECT workspace_id FROM slash_commands WHERE bot_user_id = $1 AND revoked_at IS NULL
	UNION SELECT workspace_id FROM event_subscriptions WHERE bot_user_id = $1 AND revoked_at IS NULL
	UNION SELECT workspace_id FROM connected_accounts WHERE user_id = $1 AND revoked_at IS NULL`

// botHistoryWorkspacesSQL lists every workspace a bot ($1) has left a trace in. Token rows are
// never deleted (only revoked) and a bot posts only with a token, so the workspaces of its
// messages are among its tokens'; no scan of messages is needed (a slash-command reply is
// posted as the bot without a token, but its command's registration is listed).
const botHistoryWorkspacesSQL = `
	SELECT workspace_id FROM bot_tokens WHERE bot_user_id = $1
	UNION SELECT workspace_id FROM bots WHERE user_id = $1
	UNION SELECT workspace_id FROM dm_members WHERE user_id = $1
	UNION SELECT workspace_id FROM app_installations WHERE bot_user_id = $1
	UNION SELECT workspace_id FROM slash_commands WHERE bot_user_id = $1
	UNION SELECT workspace_id FROM event_subscriptions WHERE bot_user_id = $1
	UNION SELECT workspace_id FROM connected_accounts WHERE user_id = $1`

func (tx *Tx) botWorkspaces(ctx context.Context, sql string, args ...any) ([]string, error) {
	rows, err := tx.query(ctx, `SELECT workspace_id FROM (`+sql+`) AS w ORDER BY workspace_id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// botRetire revokes everything a bot holds in each of workspaces and tombstones it: handle
// cleared (kept as former_handle, free for a new bot with a new id), deleted_at set. It checks
// nothing: BotDelete and UserDelete authorize first.
func (tx *Tx) botRetire(ctx context.Context, bot User, workspaces []string) (DeletedBot, error) {
	for _, w := range workspaces {
		if err := tx.botLeave(ctx, w, bot.ID); err != nil {
			return DeletedBot{}, err
		}
	}
	u, err := scanUser(tx.queryRow(ctx, `UPDATE users SET former_handle = coalesce(handle, former_handle), handle = NULL,
			deleted_at = $2, updated_at = $2
		WHERE id = $1 RETURNING `+userColumns, bot.ID, tx.now))
	if err != nil {
		return DeletedBot{}, err
	}
	return DeletedBot{ID: u.ID, DisplayName: u.DisplayName, FormerHandle: u.FormerHandle, DeletedAt: *u.DeletedAt}, nil
}
