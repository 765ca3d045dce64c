package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/admin/bench"
	"github.com/natterchat/natter/persist"
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
		Version:   BuildVersion(),
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
			bench.Command(bench.Seeders{Members: benchMembers, Workspaces: benchWorkspaces}, benchDataMode()),
			bench.GeneratorCommand(),
			bench.BaselineCommand(),
			watchCommand(),
			versionCommand(),
		},
		// Errors are returned to main, which prints them once.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return &UsageError{Err: errors.New(flagText(err))}
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErrorf("no command %q (natter --help lists them)", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
	}
	nameErrors("", app.Commands)
	oneLineUsage("", app.Commands)
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

// newLogger writes logs to the command's error writer: for serve and dev at --log-level in
// --log-format (checked by readServerConfig), for other commands at info.
func newLogger(c *cli.Context) *slog.Logger {
	level, _ := parseLogLevel(c.String("log-level"))
	opts := &slog.HandlerOptions{Level: level}
	if c.String("log-format") == "json" {
		return slog.New(slog.NewJSONHandler(c.App.ErrWriter, opts))
	}
	return slog.New(slog.NewTextHandler(c.App.ErrWriter, opts))
}

// parseLogLevel reads --log-level; empty is info.
func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return slog.LevelInfo, nil
	}
	err := l.UnmarshalText([]byte(s))
	return l, err
}

// configError is an invalid setting, a usage error: it names the flag and says what is wrong, in
// one line.
func configError(flag, format string, args ...any) error {
	return usageErrorf("invalid configuration: --%s: %s", flag, fmt.Sprintf(format, args...))
}

func adminCommand() *cli.Command {
	cmd := &cli.Command{
		Name:  "admin",
		Usage: "operator commands; each works against --database-url or the data dir of a running `natter dev`",
		Subcommands: []*cli.Command{
			backupCommand(),
			restoreCommand(),
			magicLinkCommand(),
			ownerCommand(),
			memberCommand(),
			eventsCommand(),
			exportCommand(),
			importCommand(),
			botCommand(),
			passwordCommand(),
			pushCommand(),
			emailCommand(),
			uploadsCommand(),
			workspaceCommand(),
		},
	}
	return cmd
}

// nameErrors makes every action's error say which command failed, so that main prints
// "natter: admin member add: <why>".
func nameErrors(prefix string, cmds []*cli.Command) {
	for _, c := range cmds {
		name := strings.TrimSpace(prefix + " " + c.Name)
		nameErrors(name, c.Subcommands)
		if action := c.Action; action != nil {
			c.Action = func(c *cli.Context) error {
				if err := action(c); err != nil {
					return fmt.Errorf("%s: %w", name, forPeople(err))
				}
				return nil
			}
		}
	}
}

// forPeople drops the machine-readable code of a store error from the text (it is for API
// clients), keeping the error itself for errors.Is and errors.As.
func forPeople(err error) error {
	var pe *persist.Error
	if !errors.As(err, &pe) {
		return err
	}
	msg := pe.Message
	if pe.Err != nil {
		msg += ": " + pe.Err.Error()
	}
	return &peopleError{text: strings.Replace(err.Error(), pe.Error(), msg, 1), err: err}
}

type peopleError struct {
	text string
	err  error
}

func (e *peopleError) Error() string { return e.text }
func (e *peopleError) Unwrap() error { return e.err }
