package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
)

func workspaceFlag() cli.Flag {
	return &cli.StringFlag{Name: "workspace", EnvVars: []string{"NATTER_WORKSPACE"}, Required: true, Usage: "the workspace's id, route id or slug"}
}

// personFlags name one person: by user id or by email.
func personFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "user", EnvVars: []string{"NATTER_USER"}, Usage: "the person's user id (usr_…)"},
		&cli.StringFlag{Name: "email", EnvVars: []string{"NATTER_EMAIL"}, Usage: "the person's email address"},
	}
}

// personOf reads --user or --email (exactly one).
func personOf(c *cli.Context) (userID, email string, err error) {
	userID, email = c.String("user"), c.String("email")
	if (userID == "") == (email == "") {
		return "", "", errors.New("give exactly one of --user and --email")
	}
	return userID, email, nil
}

// findPerson resolves --user or --email to an existing account.
func findPerson(ctx context.Context, tx *persist.Tx, userID, email string) (persist.User, error) {
	if email != "" {
		u, err := tx.UserGetByEmail(ctx, email)
		if err != nil {
			return u, fmt.Errorf("--email %s: %w", email, err)
		}
		return u, nil
	}
	u, err := tx.UserGet(ctx, userID)
	if err != nil {
		return u, fmt.Errorf("--user %s: %w", userID, err)
	}
	return u, nil
}

func memberCommand() *cli.Command {
	return &cli.Command{
		Name:  "member",
		Usage: "workspace membership",
		Subcommands: []*cli.Command{
			memberAddCommand(),
			memberListCommand(),
			memberRemoveCommand(),
		},
	}
}

func memberAddCommand() *cli.Command {
	return &cli.Command{
		Name: "add",
		Usage: "let a person into a workspace, by user id or by email (an unknown email gets a new account); an existing " +
			"member with another role is refused unless --update changes the role",
		Flags: adminFlags(append(personFlags(), workspaceFlag(),
			&cli.StringFlag{Name: "role", EnvVars: []string{"NATTER_ROLE"}, Value: persist.RoleMember, Usage: "member, moderator or guest"},
			&cli.BoolFlag{Name: "update", EnvVars: []string{"NATTER_UPDATE"}, Usage: "give an existing member --role"})...),
		Action: func(c *cli.Context) error {
			userID, email, err := personOf(c)
			if err != nil {
				return err
			}
			role := c.String("role")
			type result struct {
				member    persist.Member
				user      persist.User
				workspace persist.Workspace
				change    string // "joined", "unchanged" or "updated"
			}
			return withStore(c, func(ctx context.Context, store *persist.Store) error {
				res, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (result, error) {
					var r result
					w, err := tx.WorkspaceGetByRef(ctx, c.String("workspace"))
					if err != nil {
						return r, fmt.Errorf("--workspace %s: %w", c.String("workspace"), err)
					}
					r.workspace = w
					if email != "" {
						r.user, err = tx.UserFindOrCreateByEmail(ctx, email, "")
					} else {
						r.user, err = tx.UserGet(ctx, userID)
					}
					if err != nil {
						return r, err
					}
					existing, err := tx.MemberGet(ctx, w.ID, r.user.ID)
					switch {
					case err == nil && existing.Role == role:
						r.member, r.change = existing, "unchanged"
						return r, nil
					case err == nil && !c.Bool("update"):
						return r, fmt.Errorf("%s is already %s of %s; pass --update to make them %s",
							personName(r.user), article(existing.Role), w.Slug, article(role))
					case err == nil:
						r.member, _, err = tx.MemberSetRoleByOperator(ctx, w.ID, r.user.ID, role)
						r.change = "updated"
						return r, err
					}
					if e, ok := persist.ErrorOf(err); !ok || e.Code != persist.CodeNotFound {
						return r, err
					}
					r.member, err = tx.MemberJoin(ctx, w.ID, r.user.ID, role)
					r.change = "joined"
					return r, err
				})
				if err != nil {
					return err
				}
				sentence := map[string]string{
					"joined":    "%s joined %s as %s",
					"unchanged": "%s is already %s of %s; nothing changed",
					"updated":   "%s is now %s of %s",
				}[res.change]
				if res.change == "joined" {
					return report(c, map[string]any{"member": res.member, "change": res.change}, sentence,
						personName(res.user), res.workspace.Slug, res.member.Role)
				}
				return report(c, map[string]any{"member": res.member, "change": res.change}, sentence,
					personName(res.user), article(res.member.Role), res.workspace.Slug)
			})
		},
	}
}

func memberListCommand() *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list a workspace's members in join order, with role, email and moderation state",
		Flags: adminFlags(workspaceFlag(),
			&cli.StringFlag{Name: "role", EnvVars: []string{"NATTER_ROLE"}, Usage: "only this role: owner, moderator, member, bot or guest"},
			&cli.StringFlag{Name: "query", EnvVars: []string{"NATTER_QUERY"}, Usage: "only display names or handles containing this"}),
		Action: func(c *cli.Context) error {
			return withStore(c, func(ctx context.Context, store *persist.Store) error {
				var members []persist.OperatorMember
				err := store.WithTx(ctx, func(tx *persist.Tx) error {
					members = nil
					w, err := tx.WorkspaceGetByRef(ctx, c.String("workspace"))
					if err != nil {
						return fmt.Errorf("--workspace %s: %w", c.String("workspace"), err)
					}
					p := persist.MemberListParams{Limit: persist.MemberPageMax, Role: c.String("role"), Query: c.String("query")}
					for {
						page, err := tx.MemberListByOperator(ctx, w.ID, p)
						if err != nil {
							return err
						}
						members = append(members, page.Members...)
						if !page.HasMore {
							return nil
						}
						p.Cursor = page.NextCursor
					}
				})
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return report(c, map[string]any{"members": members}, "")
				}
				var b strings.Builder
				fmt.Fprintf(&b, "%d members", len(members))
				for _, m := range members {
					fmt.Fprintf(&b, "\n%s\t%s\t%s\t%s", m.User.ID, m.Role, m.Email, m.User.DisplayName)
					if m.BlockedAt != nil {
						b.WriteString("\tblocked")
					}
					if m.TimeoutUntil != nil {
						fmt.Fprintf(&b, "\ttimed out until %s", m.TimeoutUntil.Format("2006-01-02 15:04 MST"))
					}
				}
				return report(c, nil, "%s", b.String())
			})
		},
	}
}

func memberRemoveCommand() *cli.Command {
	return &cli.Command{
		Name: "remove",
		Usage: "take a person (with their user bots) out of a workspace, as the API's member removal does: their " +
			"sockets on it close; the owner cannot be removed (transfer ownership first)",
		Flags: adminFlags(append(personFlags(), workspaceFlag())...),
		Action: func(c *cli.Context) error {
			userID, email, err := personOf(c)
			if err != nil {
				return err
			}
			type result struct {
				removed   persist.MemberRemoved
				user      persist.User
				workspace persist.Workspace
			}
			return withStore(c, func(ctx context.Context, store *persist.Store) error {
				res, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (result, error) {
					var r result
					w, err := tx.WorkspaceGetByRef(ctx, c.String("workspace"))
					if err != nil {
						return r, fmt.Errorf("--workspace %s: %w", c.String("workspace"), err)
					}
					r.workspace = w
					if r.user, err = findPerson(ctx, tx, userID, email); err != nil {
						return r, err
					}
					r.removed, _, err = tx.MemberRemoveByOperator(ctx, w.ID, r.user.ID)
					return r, err
				})
				if err != nil {
					return err
				}
				bots := ""
				if n := len(res.removed.RemovedBotIDs); n > 0 {
					bots = fmt.Sprintf(", with %d user bots of theirs", n)
				}
				return report(c, map[string]any{"member": res.removed}, "%s left %s%s",
					personName(res.user), res.workspace.Slug, bots)
			})
		},
	}
}

// personName names an account in a sentence: its email, or its id.
func personName(u persist.User) string {
	if u.Email != "" {
		return fmt.Sprintf("%s (%s)", u.Email, u.ID)
	}
	return u.ID
}

// article puts "a" or "an" before a role.
func article(role string) string {
	if role == persist.RoleOwner {
		return "the owner"
	}
	if strings.ContainsAny(role[:1], "aeiou") {
		return "an " + role
	}
	return "a " + role
}
