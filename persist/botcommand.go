package persist

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// PrefixBotCommand prefixes command-menu entry ids.
const PrefixBotCommand = "bcm_"

// Command-menu limits.
const (
	MaxBotCommands          = 100
	MaxBotCommandText       = 100 // description and args_hint, in Unicode characters
	MaxBotCommandNameLength = 32  // after the slash
)

// BotCommandInput is one entry of a menu as a bot sends it.
type BotCommandInput struct {
	Command     string `json:"command"`
	Description string `json:"description"`
	ArgsHint    string `json:"args_hint"`
}

// BotCommand is one entry of a bot's menu in a workspace. Command is lowercase with its slash.
type BotCommand struct {
	ID          string    `json:"id"`
	WorkspaceID string    `json:"workspace_id"`
	BotUserID   string    `json:"bot_user_id"`
	Command     string    `json:"command"`
	Description string    `json:"description"`
	ArgsHint    string    `json:"args_hint,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// WorkspaceBotCommand is a menu entry as a workspace's merged listing shows it, with its bot.
type WorkspaceBotCommand struct {
	ID          string        `json:"id"`
	Command     string        `json:"command"`
	Description string        `json:"description"`
	ArgsHint    string        `json:"args_hint,omitempty"`
	Bot         BotCommandBot `json:"bot"`
	CreatedAt   time.Time     `json:"created_at"`
	UpdatedAt   time.Time     `json:"updated_at"`
}

// BotCommandBot is the bot embedded in a WorkspaceBotCommand. AvatarURL is always present, null
// when the bot has none: ClickClack menus read the key (CONTRACT.md §Compatibility).
type BotCommandBot struct {
	ID          string  `json:"id"`
	Handle      string  `json:"handle,omitempty"`
	DisplayName string  `json:"display_name"`
	AvatarURL   *string `json:"avatar_url"`
}

// NormalizeBotCommand accepts a command with or without its leading slash and returns it
// lowercase with one slash: 1-32 letters, digits, _ and -. Codes: invalid_request.
func NormalizeBotCommand(raw string) (string, error) {
	name := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(raw), "/"))
	if name == "" || len(name) > MaxBotCommandNameLength {
		return "", Invalid("a command must be 1 to %d characters after the slash", MaxBotCommandNameLength)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return "", Invalid("command %q may contain only letters, digits, _ and -", raw)
		}
	}
	return "/" + name, nil
}

// normalizeMenu validates a whole menu before anything is written. Codes: invalid_request.
func normalizeMenu(in []BotCommandInput) ([]BotCommandInput, error) {
	if len(in) > MaxBotCommands {
		return nil, Invalid("a menu holds at most %d commands", MaxBotCommands)
	}
	out := make([]BotCommandInput, 0, len(in))
	seen := map[string]bool{}
	for i, c := range in {
		cmd, err := NormalizeBotCommand(c.Command)
		if e, ok := ErrorOf(err); ok {
			return nil, Invalid("commands[%d]: %s", i, e.Message)
		}
		if seen[cmd] {
			return nil, Invalid("commands[%d]: %s appears twice; commands must be unique", i, cmd)
		}
		seen[cmd] = true
		desc, hint := strings.TrimSpace(c.Description), strings.TrimSpace(c.ArgsHint)
		if desc == "" || utf8.RuneCountInString(desc) > MaxBotCommandText {
			return nil, Invalid("commands[%d]: description is required and at most %d characters", i, MaxBotCommandText)
		}
		if utf8.RuneCountInString(hint) > MaxBotCommandText {
			return nil, Invalid("commands[%d]: args_hint must be at most %d characters", i, MaxBotCommandText)
		}
		out = append(out, BotCommandInput{Command: cmd, Description: desc, ArgsHint: hint})
	}
	return out, nil
}

const botCommandColumns = `id, workspace_id, bot_user_id, command, description, coalesce(args_hint, ''), created_at, updated_at`

// BotCommandsReplace replaces the acting bot's menu in its token's workspace with commands, as one
// unit: an invalid menu changes nothing; an empty one clears it. Entries that stay keep their id
// and created_at. The result is sorted by command. Menus are discovery metadata: they change no
// dispatch. Codes: invalid_request, forbidden (not a bot token, or no longer a member).
func (tx *Tx) BotCommandsReplace(ctx context.Context, actor Actor, commands []BotCommandInput) ([]BotCommand, error) {
	if !actor.IsBotToken() {
		return nil, Forbidden("only a bot, with its token, sets its command menu")
	}
	menu, err := normalizeMenu(commands)
	if err != nil {
		return nil, err
	}
	workspaceID := actor.TokenWorkspaceID
	if _, err := tx.requireMember(ctx, workspaceID, actor); err != nil {
		return nil, err
	}
	ids := make([]string, len(menu))
	names := make([]string, len(menu))
	descs := make([]string, len(menu))
	hints := make([]string, len(menu))
	for i, c := range menu {
		ids[i], names[i], descs[i], hints[i] = NewID(PrefixBotCommand, tx.now), c.Command, c.Description, c.ArgsHint
	}
	if _, err := tx.exec(ctx, `DELETE FROM bot_commands
		WHERE workspace_id = $1 AND bot_user_id = $2 AND command <> ALL($3::text[])`, workspaceID, actor.UserID, names); err != nil {
		return nil, err
	}
	if _, err := tx.exec(ctx, `
		INSERT INTO bot_commands (id, workspace_id, bot_user_id, command, description, args_hint, created_at, updated_at)
		SELECT n.id, $1, $2, n.command, n.description, nullif(n.hint, ''), $7, $7
		FROM unnest($3::text[], $4::text[], $5::text[], $6::text[]) AS n(id, command, description, hint)
		ON CONFLICT (workspace_id, bot_user_id, command) DO UPDATE
		SET description = excluded.description, args_hint = excluded.args_hint, updated_at = excluded.updated_at
		WHERE (bot_commands.description, bot_commands.args_hint) IS DISTINCT FROM (excluded.description, excluded.args_hint)`,
		workspaceID, actor.UserID, ids, names, descs, hints, tx.now); err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, `SELECT `+botCommandColumns+` FROM bot_commands
		WHERE workspace_id = $1 AND bot_user_id = $2 ORDER BY command`, workspaceID, actor.UserID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []BotCommand{}
	for rows.Next() {
		var c BotCommand
		if err := rows.Scan(&c.ID, &c.WorkspaceID, &c.BotUserID, &c.Command, &c.Description, &c.ArgsHint,
			&c.CreatedAt, &c.UpdatedAt); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// BotCommandListByWorkspace merges the menus of a workspace's live bots, sorted by bot handle
// (bots without one last), then command. Any member may list, and bot tokens bound to the
// workspace. Codes: not_found, forbidden.
func (tx *Tx) BotCommandListByWorkspace(ctx context.Context, actor Actor, workspaceID string) ([]WorkspaceBotCommand, error) {
	if _, err := tx.requireMemberToRead(ctx, workspaceID, actor); err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, `
		SELECT c.id, c.command, c.description, coalesce(c.args_hint, ''), c.created_at, c.updated_at,
			u.id, coalesce(u.handle, ''), u.display_name, nullif(u.avatar_url, '')
		FROM bot_commands c
		JOIN users u ON u.id = c.bot_user_id
		JOIN workspace_members m ON m.workspace_id = c.workspace_id AND m.user_id = c.bot_user_id
		WHERE c.workspace_id = $1 AND u.deleted_at IS NULL
		ORDER BY u.handle NULLS LAST, c.command, u.id`, workspaceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []WorkspaceBotCommand{}
	for rows.Next() {
		var c WorkspaceBotCommand
		if err := rows.Scan(&c.ID, &c.Command, &c.Description, &c.ArgsHint, &c.CreatedAt, &c.UpdatedAt,
			&c.Bot.ID, &c.Bot.Handle, &c.Bot.DisplayName, &c.Bot.AvatarURL); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
