package admin

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
)

func workspaceCommand() *cli.Command {
	return &cli.Command{
		Name:  "workspace",
		Usage: "workspaces",
		Subcommands: []*cli.Command{{
			Name:  "list",
			Usage: "list every workspace, oldest first, with its slug, owner and member count",
			Flags: adminFlags(),
			Action: func(c *cli.Context) error {
				return withStore(c, func(ctx context.Context, store *persist.Store) error {
					list, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) ([]persist.WorkspaceSummary, error) {
						return tx.WorkspaceListAll(ctx)
					})
					if err != nil {
						return err
					}
					var b strings.Builder
					fmt.Fprintf(&b, "%d workspaces", len(list))
					for _, w := range list {
						fmt.Fprintf(&b, "\n%s\t%s\t%q\towner %s\t%d members", w.Workspace.ID, w.Workspace.Slug,
							w.Workspace.Name, w.OwnerEmail, w.MemberCount)
					}
					return report(c, map[string]any{"workspaces": list}, "%s", b.String())
				})
			},
		}},
	}
}
