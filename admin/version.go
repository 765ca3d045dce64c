package admin

import (
	"fmt"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// BuildVersion describes this binary from the build information the Go toolchain embeds: the
// module version ("(devel)" for a build from a checkout), the commit it was built from (with
// "+modified" when the work tree had changes) and the Go version.
func BuildVersion() string {
	version, commit, goVersion := buildFacts()
	if version == "unknown" {
		return "unknown (no build information)"
	}
	return fmt.Sprintf("%s, commit %s, %s", version, commit, goVersion)
}

// buildFacts are BuildVersion's three parts, each "unknown" without build information.
func buildFacts() (version, commit, goVersion string) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown", "unknown", "unknown"
	}
	version = info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	commit, modified := "unknown", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified {
		commit += "+modified"
	}
	return version, commit, info.GoVersion
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version, commit and Go version this binary was built with (also natter --version)",
		Action: func(c *cli.Context) error {
			cli.VersionPrinter(c)
			return nil
		},
	}
}
