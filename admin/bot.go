package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
)

func botCommand() *cli.Command {
	return &cli.Command{
		Name:  "bot",
		Usage: "bot identities",
		Subcommands: []*cli.Command{{
			Name: "create",
			Usage: "create a bot in a workspace with a first token, under the same rules as the API (a service bot needs an " +
				"owner or moderator as --created-by; a user bot's --owner is --created-by); prints {bot, token, bot_token} as JSON " +
				"(--json is the default here), or with --plain the bare ccb_ token",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "workspace", EnvVars: []string{"NATTER_WORKSPACE"}, Required: true, Usage: "the workspace: id, route id or slug"},
				&cli.StringFlag{Name: "created-by", EnvVars: []string{"NATTER_CREATED_BY"}, Required: true,
					Usage: "the human creating the bot: a user id (usr_…) or an email address"},
				&cli.StringFlag{Name: "name", EnvVars: []string{"NATTER_BOT_NAME"}, Required: true, Usage: "the bot's display name"},
				&cli.StringFlag{Name: "handle", EnvVars: []string{"NATTER_HANDLE"}, Usage: "the bot's handle (2-32 letters, digits, _ and -)"},
				&cli.StringFlag{Name: "scopes", EnvVars: []string{"NATTER_SCOPES"}, Value: strings.Join(persist.DefaultScopes, ","),
					Usage: "comma-separated scopes and bundles (bot:read, bot:write, bot:admin; agent_activity:write only when named)"},
				&cli.StringFlag{Name: "owner", EnvVars: []string{"NATTER_OWNER"},
					Usage: "make a user bot owned by this user id (it must be the --created-by user); omit for a service bot"},
				&cli.BoolFlag{Name: "plain", EnvVars: []string{"NATTER_PLAIN"}, Usage: "print only the raw ccb_ token"},
				databaseURLFlag(), dataDirFlag(), jsonFlag(), verboseFlag(),
			},
			Action: func(c *cli.Context) error {
				return withStore(c, func(ctx context.Context, store *persist.Store) error {
					res, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.BotCreated, error) {
						return createBotAs(ctx, tx, c.String("created-by"), c.String("workspace"), persist.BotCreateParams{
							OwnerUserID: c.String("owner"), DisplayName: c.String("name"), Handle: c.String("handle"),
							InitialToken: true, Scopes: []string{c.String("scopes")}})
					})
					if err != nil {
						return err
					}
					if c.Bool("plain") {
						fmt.Fprintln(c.App.Writer, res.Token.Token)
						return nil
					}
					// The command line's contract prints this JSON by default, so --json changes nothing.
					out, err := json.MarshalIndent(map[string]any{"bot": res.Bot.Public(), "token": res.Token.Token,
						"bot_token": res.Token}, "", "  ")
					if err != nil {
						return err
					}
					fmt.Fprintln(c.App.Writer, string(out))
					return nil
				})
			},
		}},
	}
}

// createBotAs creates a bot in the workspace named by ref with the authority of creator, a live
// human named by id or email.
func createBotAs(ctx context.Context, tx *persist.Tx, creator, ref string, p persist.BotCreateParams) (persist.BotCreated, error) {
	w, err := tx.WorkspaceGetByRef(ctx, ref)
	if err != nil {
		return persist.BotCreated{}, fmt.Errorf("--workspace %s: %w", ref, err)
	}
	var u persist.User
	if strings.Contains(creator, "@") {
		u, err = tx.UserGetByEmail(ctx, creator)
	} else {
		u, err = tx.UserGet(ctx, creator)
	}
	if err == nil && (u.Kind != persist.KindHuman || u.DeletedAt != nil) {
		err = persist.NotFound("user")
	}
	if err != nil {
		return persist.BotCreated{}, fmt.Errorf("--created-by %s: %w", creator, err)
	}
	return tx.BotCreate(ctx, persist.ActorFor(u), w.ID, p)
}
