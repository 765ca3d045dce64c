package admin

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
)

// withStore opens the database for one operator command and closes it afterwards.
func withStore(c *cli.Context, fn func(ctx context.Context, store *persist.Store) error) (err error) {
	db, err := openDatabase(c.Context, c, newLogger(c), persist.Config{MaxConns: 2})
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
			Usage: "print a single-use mgt_ sign-in token (valid 15 minutes) for an email; the account is created on first use",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "email", EnvVars: []string{"NATTER_EMAIL"}, Required: true, Usage: "the person's email address"},
				&cli.StringFlag{Name: "name", EnvVars: []string{"NATTER_NAME"}, Usage: "display name for a new account (default: the email's local part)"},
				databaseURLFlag(), dataDirFlag(),
			},
			Action: func(c *cli.Context) error {
				return withStore(c, func(ctx context.Context, store *persist.Store) error {
					token, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (string, error) {
						return tx.MagicLinkCreate(ctx, c.String("email"), c.String("name"))
					})
					if err != nil {
						return err
					}
					fmt.Fprintln(c.App.Writer, token)
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
			Name:  "pin",
			Usage: "choose the account dev bootstrap makes owner of the default workspace (created by email if needed); prints its user id",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "email", EnvVars: []string{"NATTER_EMAIL"}, Required: true, Usage: "the owner's email address"},
				&cli.StringFlag{Name: "name", EnvVars: []string{"NATTER_NAME"}, Required: true, Usage: "the owner's display name"},
				databaseURLFlag(), dataDirFlag(),
			},
			Action: func(c *cli.Context) error {
				return withStore(c, func(ctx context.Context, store *persist.Store) error {
					u, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) {
						return tx.OwnerPin(ctx, c.String("email"), c.String("name"))
					})
					if err != nil {
						return err
					}
					fmt.Fprintln(c.App.Writer, u.ID)
					return nil
				})
			},
		}},
	}
}
