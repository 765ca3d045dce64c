package admin

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/archive"
)

// importNatterCommand is `natter admin import natter FILE`: a Natter export archive read back
// into this deployment as a new workspace.
func importNatterCommand() *cli.Command {
	return &cli.Command{
		Name:      "natter",
		ArgsUsage: "FILE",
		Usage: "import a Natter export archive (natter admin export, or an owner's download) as a new workspace " +
			"with new ids; with --workspace, resume an earlier import of the same archive (nothing is written twice)",
		Flags: adminFlags(append([]cli.Flag{
			&cli.StringFlag{Name: "workspace", EnvVars: []string{"NATTER_WORKSPACE"},
				Usage: "a workspace an earlier run of this archive created, to resume into (id, route id or slug)"},
			&cli.StringFlag{Name: "slug", EnvVars: []string{"NATTER_SLUG"},
				Usage: "the new workspace's slug (default: the archive's), to import beside the workspace it came from"},
		}, uploadFlags()...)...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErrorf("import natter takes the archive file: natter admin import natter FILE")
			}
			blobs, err := openUploads(c)
			if err != nil {
				return err
			}
			return withStore(c, func(ctx context.Context, store *persist.Store) error {
				r, err := archive.Import(ctx, c.Args().First(), archive.ImportOptions{Store: store, Blobs: blobs,
					Workspace: c.String("workspace"), Slug: c.String("slug"), Logger: adminLogger(c)})
				if err != nil {
					if r.WorkspaceID != "" {
						return fmt.Errorf("%w (resume with --workspace %s)", err, r.WorkspaceID)
					}
					return err
				}
				return report(c, r, "%s", importSummary(r))
			})
		},
	}
}

// importSummary is a Report in sentences: counts per kind, then every skip with its reason.
func importSummary(r archive.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "imported into workspace %s (source %s)", r.WorkspaceID, r.Source)
	for _, kind := range []string{persist.HistoryKindPerson, persist.HistoryKindChannel, persist.HistoryKindConversation,
		persist.HistoryKindMessage, persist.HistoryKindUpload} {
		if n := r.Counts[kind]; n != nil {
			fmt.Fprintf(&b, "\n%ss: %d created, %d matched, %d already imported", kind, n.Created, n.Matched, n.Existing)
		}
	}
	fmt.Fprintf(&b, "\n%d records skipped", r.SkipCount)
	for _, s := range r.Skips {
		fmt.Fprintf(&b, "\n  %s line %d: %s", s.Entry, s.Line, s.Reason)
	}
	if len(r.Skips) < r.SkipCount {
		fmt.Fprintf(&b, "\n  (%d more not listed)", r.SkipCount-len(r.Skips))
	}
	return b.String()
}
