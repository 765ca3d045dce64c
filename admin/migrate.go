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
		Flags: []cli.Flag{databaseURLFlag(), dataDirFlag()},
		Action: func(c *cli.Context) error {
			db, err := openDatabase(c.Context, c, newLogger(c), persist.Config{MaxConns: 2})
			if err != nil {
				return err
			}
			fmt.Fprintln(c.App.Writer, "database is up to date")
			return db.Close(context.WithoutCancel(c.Context))
		},
	}
}
