package admin

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/urfave/cli/v2"
)

// The house rule for what an admin command prints: one sentence for people by default; with
// --json one JSON object for scripts; where the output is a secret (a magic-link token, a bot
// token with --plain), the bare secret alone. Errors are returned and main prints them once, as
// "natter: <command>: <why>". Logs go to stderr, warnings only unless --verbose.

// adminFlags are the flags every admin command takes besides its own: where the database is,
// --json and --verbose.
func adminFlags(own ...cli.Flag) []cli.Flag {
	return append(own, databaseURLFlag(), dataDirFlag(), jsonFlag(), verboseFlag())
}

func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", EnvVars: []string{"NATTER_JSON"}, Usage: "print the result as one JSON object instead of a sentence"}
}

func verboseFlag() cli.Flag {
	return &cli.BoolFlag{Name: "verbose", EnvVars: []string{"NATTER_VERBOSE"}, Usage: "log progress (otherwise only warnings are logged)"}
}

// adminLogger logs warnings and errors, and progress too with --verbose.
func adminLogger(c *cli.Context) *slog.Logger {
	level := slog.LevelWarn
	if c.Bool("verbose") {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level}))
}

// report prints a command's result: v as JSON with --json, else the sentence.
func report(c *cli.Context, v any, format string, args ...any) error {
	if c.Bool("json") {
		out, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(c.App.Writer, string(out))
		return err
	}
	_, err := fmt.Fprintf(c.App.Writer, format+"\n", args...)
	return err
}
