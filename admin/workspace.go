package admin

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server"
)

func workspaceCommand() *cli.Command {
	return &cli.Command{
		Name:  "workspace",
		Usage: "workspaces",
		Subcommands: []*cli.Command{workspaceCreateCommand(), workspaceDeleteCommand(), {
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

// workspaceCreateCommand is the first-run path of `natter serve`: a workspace with #general,
// owned by an account found or created by email, who then signs in with a magic link.
func workspaceCreateCommand() *cli.Command {
	return &cli.Command{
		Name: "create",
		Usage: "create a workspace with a #general channel, owned by the account of --owner-email (created if needed); " +
			"then `natter admin magic-link create --email` signs the owner in",
		Flags: adminFlags(
			&cli.StringFlag{Name: "name", EnvVars: []string{"NATTER_WORKSPACE_NAME"}, Required: true, Usage: "the workspace's name"},
			&cli.StringFlag{Name: "slug", EnvVars: []string{"NATTER_WORKSPACE_SLUG"}, Usage: "the workspace's slug (default: from the name)"},
			&cli.StringFlag{Name: "owner-email", EnvVars: []string{"NATTER_OWNER_EMAIL"}, Required: true, Usage: "the owner's email address"},
			&cli.StringFlag{Name: "owner-name", EnvVars: []string{"NATTER_OWNER_NAME"},
				Usage: "display name of a new owner account (default: the email's local part)"}),
		Action: func(c *cli.Context) error {
			return withStore(c, func(ctx context.Context, store *persist.Store) error {
				type created struct {
					Workspace persist.Workspace `json:"workspace"`
					Owner     persist.User      `json:"owner"`
					Channel   persist.Channel   `json:"channel"`
				}
				out, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (created, error) {
					owner, err := tx.UserFindOrCreateByEmail(ctx, c.String("owner-email"), c.String("owner-name"))
					if err != nil {
						return created{}, fmt.Errorf("--owner-email %s: %w", c.String("owner-email"), err)
					}
					w, err := tx.WorkspaceCreate(ctx, owner.ID, c.String("name"), c.String("slug"))
					if err != nil {
						return created{}, err
					}
					// channel.created is the transaction's last write.
					ch, _, err := tx.ChannelCreate(ctx, persist.ActorFor(owner), w.ID, persist.ChannelCreateParams{Name: "general"})
					return created{Workspace: w, Owner: owner, Channel: ch}, err
				})
				if err != nil {
					return err
				}
				return report(c, out, "workspace %s (%s, slug %s) created with #general, owned by %s (%s)",
					out.Workspace.Name, out.Workspace.ID, out.Workspace.Slug, out.Owner.Email, out.Owner.ID)
			})
		},
	}
}

// workspaceDeleteCommand deletes a workspace for good (bench leftovers, a mistaken create), as
// its owner would through the API, then deletes its uploaded files.
func workspaceDeleteCommand() *cli.Command {
	return &cli.Command{
		Name: "delete",
		Usage: "delete a workspace and everything in it, permanently, with its uploaded files; --confirm must repeat " +
			"the workspace's slug",
		Flags: adminFlags(append([]cli.Flag{workspaceFlag(),
			&cli.StringFlag{Name: "confirm", Required: true, Usage: "the workspace's slug, typed again"}}, uploadFlags()...)...),
		Action: func(c *cli.Context) error {
			blobs, err := openUploads(c)
			if err != nil {
				return err
			}
			return withStore(c, func(ctx context.Context, store *persist.Store) error {
				w, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Workspace, error) {
					w, err := tx.WorkspaceGetByRef(ctx, c.String("workspace"))
					if err != nil {
						return w, fmt.Errorf("--workspace %s: %w", c.String("workspace"), err)
					}
					if c.String("confirm") != w.Slug {
						return w, configError("confirm", "must be the workspace's slug, %s", w.Slug)
					}
					owner, err := tx.WorkspaceOwner(ctx, w.ID)
					if err != nil {
						return w, err
					}
					return w, tx.WorkspaceDelete(ctx, persist.ActorFor(owner), w.ID)
				})
				if err != nil {
					return err
				}
				res, err := server.DeleteQueuedUploads(ctx, store, blobs)
				if err != nil {
					return fmt.Errorf("workspace deleted; %d of its upload objects could not be deleted and stay queued "+
						"(natter admin uploads retry-deletions): %w", res.Failed, err)
				}
				return report(c, map[string]any{"deleted": w.ID, "uploads_deleted": res.Deleted},
					"workspace %s (%s) deleted with %d upload objects", w.Slug, w.ID, res.Deleted)
			})
		},
	}
}
