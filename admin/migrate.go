package admin

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
)

func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:  "migrate",
		Usage: "apply pending database migrations ahead of a deploy (serve and dev also apply them at start)",
		Flags: adminFlags(),
		Action: func(c *cli.Context) error {
			db, err := openDatabase(c.Context, c, adminLogger(c), persist.Config{MaxConns: 2}, false)
			if err != nil {
				return err
			}
			sentence := "database is up to date"
			if len(db.Applied) > 0 {
				sentence = fmt.Sprintf("database is up to date; applied migrations %v", db.Applied)
			}
			if err := report(c, map[string]any{"applied": db.Applied}, "%s", sentence); err != nil {
				_ = db.Close(context.WithoutCancel(c.Context))
				return err
			}
			return db.Close(context.WithoutCancel(c.Context))
		},
	}
}
