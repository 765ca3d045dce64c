package admin

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sync/errgroup"

	"github.com/natterchat/natter/persist"
)

// benchMembers is the bench's member seeder (`natter bench --members`): n people join the
// workspace, each signed in with a session of their own, through persist's own write paths (as
// the API writes them: a user, a membership and its event, a session), 500 to a transaction, four
// transactions at once. Through the API it would be n sign-ups by e-mail.
func benchMembers(c *cli.Context, workspaceID string, n int) ([]string, error) {
	logger := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := openDatabase(c.Context, c, logger, persist.Config{MaxConns: 8}, false)
	if err != nil {
		return nil, err
	}
	defer db.Close(c.Context)
	return seedBenchMembers(c, db.Store, workspaceID, n)
}

func seedBenchMembers(c *cli.Context, store *persist.Store, workspaceID string, n int) ([]string, error) {
	ctx := c.Context
	tokens := make([]string, n)
	stamp := time.Now().UTC().Format("150405")
	const batch = 500
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for from := 0; from < n; from += batch {
		g.Go(func() error {
			return store.WithTx(gctx, func(tx *persist.Tx) error {
				for i := from; i < min(from+batch, n); i++ {
					u, err := tx.UserCreate(gctx, persist.UserCreateParams{DisplayName: fmt.Sprintf("Bench %s %d", stamp, i),
						Handle: fmt.Sprintf("b%s-%d", stamp, i)})
					if err != nil {
						return err
					}
					if _, err := tx.MemberJoin(gctx, workspaceID, u.ID, persist.RoleMember); err != nil {
						return err
					}
					if _, tokens[i], err = tx.SessionCreate(gctx, u.ID, "bench"); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return tokens, nil
}

// benchWorkspaces is the tenants bench's seeder of dormant workspaces (`natter bench --mode
// tenants`): n workspaces of the owner with a #general each, through persist's own write paths,
// 200 to a transaction, four at once, written while the server is stopped. Each is then left
// as the relay leaves a workspace it has relayed and whose stream it retired (relay_positions at
// the head, stream_retired): what creating them through the API and waiting --stream-idle
// leaves behind, without the hour 20,000 stream creations and retirements take here.
func benchWorkspaces(ctx context.Context, databaseURL, ownerID string, n int) ([][2]string, error) {
	store, err := persist.Open(ctx, persist.Config{URL: databaseURL, MaxConns: 8})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	out := make([][2]string, n)
	stamp := time.Now().UTC().Format("150405")
	const batch = 200
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for from := 0; from < n; from += batch {
		g.Go(func() error {
			return store.WithTx(gctx, func(tx *persist.Tx) error {
				owner, err := tx.UserGet(gctx, ownerID)
				if err != nil {
					return err
				}
				var ids []string
				for i := from; i < min(from+batch, n); i++ {
					ws, err := tx.WorkspaceCreate(gctx, ownerID, fmt.Sprintf("dormant-%s-%d", stamp, i), "")
					if err != nil {
						return err
					}
					ch, _, err := tx.ChannelCreate(gctx, persist.ActorFor(owner), ws.ID, persist.ChannelCreateParams{Name: "general"})
					if err != nil {
						return err
					}
					out[i] = [2]string{ws.ID, ch.ID}
					ids = append(ids, ws.ID)
				}
				return tx.RelaySeedRetired(gctx, ids)
			})
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}
