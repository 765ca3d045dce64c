package admin

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/webpush"
)

func pushCommand() *cli.Command {
	return &cli.Command{
		Name:  "push",
		Usage: "web push notifications",
		Subcommands: []*cli.Command{{
			Name: "rotate-key",
			Usage: "replace the server's VAPID key pair: every device registration is invalidated (browsers register " +
				"again when the app opens; nothing is sent under the retired key, and devices that do not come back " +
				"within 30 days are swept)",
			Flags: []cli.Flag{databaseURLFlag(), dataDirFlag()},
			Action: func(c *cli.Context) error {
				return withStore(c, func(ctx context.Context, store *persist.Store) error {
					next, retired, err := webpush.RotateKey(ctx, store)
					if err != nil {
						return fmt.Errorf("natter admin push rotate-key: %w", err)
					}
					if retired == "" {
						retired = "none"
					}
					fmt.Fprintf(c.App.Writer, "new push key %s (public key %s); retired %s\n", next.Fingerprint, next.PublicKey, retired)
					return nil
				})
			},
		}},
	}
}
