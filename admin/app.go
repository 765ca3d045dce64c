package admin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/urfave/cli/v2"
)

// Run executes the command line args (args[0] is the program name) and returns its error, for
// main to print and turn into an exit status. Commands that read input read the process's stdin.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return RunWithInput(ctx, args, os.Stdin, stdout, stderr)
}

// RunWithInput is Run with stdin given, so tests can drive commands that read input.
func RunWithInput(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	app := &cli.App{
		Name:      "natter",
		Usage:     "a team-chat server: HTTP/JSON API, WebSocket realtime, Postgres and NATS JetStream",
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: []*cli.Command{
			serveCommand(),
			devCommand(),
			clusterCommand(),
			migrateCommand(),
			adminCommand(),
			benchCommand(),
		},
		// Errors are returned to main, which prints them once.
		ExitErrHandler: func(*cli.Context, error) {},
	}
	// urfave/cli v2 writes to its package-level help flag and help command while it sets a run
	// up, so runs in one process (the in-process CLI tests) take turns until their action starts.
	setupMu.Lock()
	var once sync.Once
	release := func() { once.Do(setupMu.Unlock) }
	defer release()
	releaseOnAction(app.Commands, release)
	return app.RunContext(ctx, args)
}

var setupMu sync.Mutex

// releaseOnAction makes every action release the set-up lock before it runs.
func releaseOnAction(cmds []*cli.Command, release func()) {
	for _, c := range cmds {
		releaseOnAction(c.Subcommands, release)
		if action := c.Action; action != nil {
			c.Action = func(c *cli.Context) error {
				release()
				return action(c)
			}
		}
	}
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
			botCommand(),
			passwordCommand(),
			pushCommand(),
			uploadsCommand(),
		},
	}
}
