package admin

import (
	"github.com/urfave/cli/v2"
)

// importCommand brings history from elsewhere into a workspace.
func importCommand() *cli.Command {
	return &cli.Command{
		Name:        "import",
		Usage:       "import history into a workspace",
		Subcommands: []*cli.Command{importSlackCommand(), importNatterCommand()},
	}
}
