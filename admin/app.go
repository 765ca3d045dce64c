package admin

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/urfave/cli/v2"
)

// Run executes the command line args (args[0] is the program name) and returns its error, for
// main to print and turn into an exit status.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	app := &cli.App{
		Name:      "natter",
		Usage:     "a team-chat server: HTTP/JSON API, WebSocket realtime, Postgres and NATS JetStream",
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: []*cli.Command{
			serveCommand(),
			devCommand(),
			migrateCommand(),
			adminCommand(),
			benchCommand(),
		},
		// Errors are returned to main, which prints them once.
		ExitErrHandler: func(*cli.Context, error) {},
	}
	return app.RunContext(ctx, args)
}

// newLogger writes text logs to the command's error writer.
func newLogger(c *cli.Context) *slog.Logger {
	return slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// configError is an invalid setting: it names the flag and says what is wrong, in one line.
func configError(flag, format string, args ...any) error {
	return fmt.Errorf("invalid configuration: --%s: %s", flag, fmt.Sprintf(format, args...))
}

func adminCommand() *cli.Command {
	return &cli.Command{
		Name:  "admin",
		Usage: "operator commands; each works against --database-url or the data dir of a running `natter dev`",
		Subcommands: []*cli.Command{
			magicLinkCommand(),
			ownerCommand(),
			memberCommand(),
			eventsCommand(),
		},
	}
}
