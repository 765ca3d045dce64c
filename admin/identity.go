package admin

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
)

// withStore opens the database for one operator command and closes it afterwards.
func withStore(c *cli.Context, fn func(ctx context.Context, store *persist.Store) error) (err error) {
	db, err := openDatabase(c.Context, c, adminLogger(c), persist.Config{MaxConns: 2}, false)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(context.WithoutCancel(c.Context)); cerr != nil && err == nil {
			err = cerr
		}
	}()
	return fn(c.Context, db.Store)
}

func magicLinkCommand() *cli.Command {
	return &cli.Command{
		Name:  "magic-link",
		Usage: "sign-in links",
		Subcommands: []*cli.Command{{
			Name:  "create",
			Usage: "print a single-use mgt_ sign-in token (valid 15 minutes) for an email, alone on stdout; the account is created on first use",
			Flags: adminFlags(
				&cli.StringFlag{Name: "email", EnvVars: []string{"NATTER_EMAIL"}, Required: true, Usage: "the person's email address"},
				displayNameFlag(false, "display name for a new account (default: the email's local part)")),
			Action: func(c *cli.Context) error {
				return withStore(c, func(ctx context.Context, store *persist.Store) error {
					token, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (string, error) {
						return tx.MagicLinkCreate(ctx, c.String("email"), c.String("display-name"))
					})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return report(c, map[string]any{"token": token, "email": c.String("email")}, "")
					}
					// The secret alone on stdout, so that it pipes; the rest is for a person.
					fmt.Fprintln(c.App.Writer, token)
					fmt.Fprintln(c.App.ErrWriter, "a single-use sign-in token for "+c.String("email")+
						", valid 15 minutes: POST /api/auth/magic/consume {\"token\": \"…\"}")
					return nil
				})
			},
		}},
	}
}

func ownerCommand() *cli.Command {
	return &cli.Command{
		Name:  "owner",
		Usage: "the instance owner",
		Subcommands: []*cli.Command{{
			Name: "pin",
			Usage: "choose the account dev bootstrap makes owner of the default workspace (created by email if needed) and " +
				"print its user id; refused once the default workspace has another owner",
			Flags: adminFlags(
				&cli.StringFlag{Name: "email", EnvVars: []string{"NATTER_EMAIL"}, Required: true, Usage: "the owner's email address"},
				displayNameFlag(true, "the owner's display name")),
			Action: func(c *cli.Context) error {
				return withStore(c, func(ctx context.Context, store *persist.Store) error {
					u, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) {
						return tx.OwnerPin(ctx, c.String("email"), c.String("display-name"))
					})
					if err != nil {
						return err
					}
					return report(c, map[string]any{"user": u}, "owner pinned: %s (%s)", u.ID, u.Email)
				})
			},
		}},
	}
}

// displayNameFlag is a person's display name. It is --display-name (NATTER_DISPLAY_NAME), apart
// from a bot's --name; --name stays accepted here for the command lines written before.
func displayNameFlag(required bool, usage string) cli.Flag {
	return &cli.StringFlag{Name: "display-name", Aliases: []string{"name"}, EnvVars: []string{"NATTER_DISPLAY_NAME"},
		Required: required, Usage: usage}
}
