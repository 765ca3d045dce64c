package admin

import (
	"context"

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
			Flags: adminFlags(),
			Action: func(c *cli.Context) error {
				return withStore(c, func(ctx context.Context, store *persist.Store) error {
					next, retired, err := webpush.RotateKey(ctx, store)
					if err != nil {
						return err
					}
					shown := retired
					if shown == "" {
						shown = "none"
					}
					return report(c, map[string]any{"fingerprint": next.Fingerprint, "public_key": next.PublicKey, "retired": retired},
						"new push key %s (public key %s); retired %s", next.Fingerprint, next.PublicKey, shown)
				})
			},
		}},
	}
}
