package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
)

func memberCommand() *cli.Command {
	return &cli.Command{
		Name:  "member",
		Usage: "workspace membership",
		Subcommands: []*cli.Command{{
			Name: "add",
			Usage: "let a person into a workspace, by user id or by email (an unknown email gets a new account); " +
				"an existing member keeps their role; prints the membership as JSON",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "workspace", EnvVars: []string{"NATTER_WORKSPACE"}, Required: true, Usage: "the workspace's id, route id or slug"},
				&cli.StringFlag{Name: "user", EnvVars: []string{"NATTER_USER"}, Usage: "the person's user id (usr_…)"},
				&cli.StringFlag{Name: "email", EnvVars: []string{"NATTER_EMAIL"}, Usage: "the person's email address"},
				&cli.StringFlag{Name: "role", EnvVars: []string{"NATTER_ROLE"}, Value: persist.RoleMember, Usage: "member, moderator or guest"},
				databaseURLFlag(), dataDirFlag(),
			},
			Action: func(c *cli.Context) error {
				userID, email := c.String("user"), c.String("email")
				if (userID == "") == (email == "") {
					return errors.New("natter admin member add: give exactly one of --user and --email")
				}
				return withStore(c, func(ctx context.Context, store *persist.Store) error {
					m, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Member, error) {
						w, err := tx.WorkspaceGetByRef(ctx, c.String("workspace"))
						if err != nil {
							return persist.Member{}, err
						}
						if email != "" {
							u, err := tx.UserFindOrCreateByEmail(ctx, email, "")
							if err != nil {
								return persist.Member{}, err
							}
							userID = u.ID
						}
						return tx.MemberJoin(ctx, w.ID, userID, c.String("role"))
					})
					if err != nil {
						return fmt.Errorf("natter admin member add: %w", err)
					}
					out, err := json.Marshal(map[string]any{"member": m})
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
