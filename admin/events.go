package admin

import (
	"context"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
)

func eventsCommand() *cli.Command {
	return &cli.Command{
		Name:  "events",
		Usage: "the per-workspace event log",
		Subcommands: []*cli.Command{{
			Name: "prune",
			Usage: "delete a workspace's old events by age and count; the relay applies the same window to the workspace's " +
				"stream, and clients behind it must resync (410 / close 4001)",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "workspace", EnvVars: []string{"NATTER_WORKSPACE"}, Required: true, Usage: "the workspace's id, route id or slug"},
				&cli.IntFlag{Name: "older-than-days", EnvVars: []string{"NATTER_OLDER_THAN_DAYS"}, Usage: "delete events created more than this many days ago"},
				&cli.Int64Flag{Name: "keep-latest", EnvVars: []string{"NATTER_KEEP_LATEST"}, Usage: "always keep at least this many of the newest events"},
				databaseURLFlag(), dataDirFlag(), jsonFlag(), verboseFlag(),
			},
			Action: func(c *cli.Context) error {
				var p persist.EventPruneParams
				if c.IsSet("older-than-days") {
					days := c.Int("older-than-days")
					if days < 0 {
						return configError("older-than-days", "must not be negative")
					}
					at := time.Now().AddDate(0, 0, -days)
					p.OlderThan = &at
				}
				if c.IsSet("keep-latest") {
					keep := c.Int64("keep-latest")
					if keep < 0 {
						return configError("keep-latest", "must not be negative")
					}
					p.KeepLatest = &keep
				}
				if p.OlderThan == nil && p.KeepLatest == nil {
					return usageErrorf("invalid configuration: say what to prune: --older-than-days, --keep-latest, or both")
				}
				return withStore(c, func(ctx context.Context, store *persist.Store) error {
					type result struct {
						workspaceID string
						persist.EventPruneResult
					}
					res, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (result, error) {
						w, err := tx.WorkspaceGetByRef(ctx, c.String("workspace"))
						if err != nil {
							return result{}, err
						}
						r, err := tx.EventPrune(ctx, w.ID, p)
						return result{w.ID, r}, err
					})
					if err != nil {
						return err
					}
					return report(c, map[string]any{"workspace_id": res.workspaceID, "deleted": res.Deleted,
						"oldest_retained_cursor": res.PrunedThrough + 1},
						"pruned %d events of %s; the oldest retained cursor is %d", res.Deleted, res.workspaceID, res.PrunedThrough+1)
				})
			},
		}},
	}
}
