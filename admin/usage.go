package admin

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/urfave/cli/v2"
)

// UsageError is a command line natter cannot run as written: an unknown flag or command, a
// missing required flag, a value that does not parse or breaks a rule. main exits 2 for it (1 for
// any other failure), and prints one line without the help text; `natter <command> --help` shows
// that.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// IsUsageError reports whether err is, or wraps, a UsageError.
func IsUsageError(err error) bool {
	var ue *UsageError
	return errors.As(err, &ue)
}

func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// oneLineUsage makes every command of the tree report its usage errors as one returned line,
// named by the command: flags that do not parse (urfave/cli would print the help text), required
// flags (checked before the action instead of by urfave/cli, which prints the help text too), and
// unknown subcommands (urfave/cli says "No help topic"). prefix is the parent's name.
func oneLineUsage(prefix string, cmds []*cli.Command) {
	for _, c := range cmds {
		name := strings.TrimSpace(prefix + " " + c.Name)
		oneLineUsage(name, c.Subcommands)
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			return &UsageError{Err: fmt.Errorf("%s: %s", name, flagText(err))}
		}
		required := takeRequired(c.Flags)
		switch action := c.Action; {
		case action != nil:
			c.Action = func(cc *cli.Context) error {
				for _, f := range required {
					if !cc.IsSet(f) {
						return usageErrorf("%s: required flag --%s not set", name, f)
					}
				}
				return action(cc)
			}
		case len(c.Subcommands) > 0:
			c.Action = func(cc *cli.Context) error {
				if cc.Args().Present() {
					return usageErrorf("%s: no command %q (natter %s --help lists them)", name, cc.Args().First(), name)
				}
				return cli.ShowSubcommandHelp(cc)
			}
		}
	}
}

// takeRequired turns off urfave/cli's own check of the required flags and returns their names.
func takeRequired(flags []cli.Flag) []string {
	var names []string
	for _, f := range flags {
		rf, ok := f.(cli.RequiredFlag)
		if !ok || !rf.IsRequired() {
			continue
		}
		v := reflect.ValueOf(f)
		if v.Kind() == reflect.Pointer {
			if field := v.Elem().FieldByName("Required"); field.IsValid() && field.CanSet() {
				field.SetBool(false)
				names = append(names, f.Names()[0])
			}
		}
	}
	return names
}

// flagText speaks of flags as people type them: urfave/cli's parser says "-bogus".
func flagText(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + strings.TrimPrefix(rest, "-")
	}
	return strings.Replace(msg, " for -", " for --", 1)
}
