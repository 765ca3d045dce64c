package admin

import (
	"io"
	"log/slog"
	"strings"
)

// ExitStatus is the process exit status for Run's error: 0 for none, 2 for a usage error, 1 for
// any other failure.
func ExitStatus(err error) int {
	switch {
	case err == nil:
		return 0
	case IsUsageError(err):
		return 2
	default:
		return 1
	}
}

// PrintError writes Run's error as main's last line: "natter: <command>: <why>", or, when the
// command line (or NATTER_LOG_FORMAT) asks for JSON logs, the same sentence as one JSON log
// record with the exit status, so that a log pipeline reading JSON lines keeps the line that
// says why natter stopped.
func PrintError(w io.Writer, args []string, getenv func(string) string, err error) {
	msg := "natter: " + err.Error()
	if !jsonLogs(args, getenv) {
		_, _ = io.WriteString(w, msg+"\n")
		return
	}
	slog.New(slog.NewJSONHandler(w, nil)).Error(msg, "exit_status", ExitStatus(err))
}

// jsonLogs reports whether args or the environment choose --log-format json. The arguments are
// read as written rather than as parsed, because the error may be that they do not parse (a
// misspelt flag beside --log-format json); the last occurrence wins, as with flag parsing.
func jsonLogs(args []string, getenv func(string) string) bool {
	format := getenv("NATTER_LOG_FORMAT")
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "log-format" {
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				break
			}
			i++
			value = args[i]
		}
		format = value
	}
	return format == "json"
}
