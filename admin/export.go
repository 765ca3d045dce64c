package admin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/archive"
)

// exportCommand is `natter admin export`: the operator's archive of a whole workspace (every
// channel, private ones included, every direct conversation, emails, read state), format in
// docs/operations.md.
func exportCommand() *cli.Command {
	return &cli.Command{
		Name: "export",
		Usage: "write a workspace to a Natter export archive (a zip of JSON Lines with the uploaded files; " +
			"everything in the workspace, private channels and direct messages included; never tokens, " +
			"password hashes or signing secrets); `natter admin import natter FILE` reads it back",
		Flags: adminFlags(append([]cli.Flag{workspaceFlag(),
			&cli.StringFlag{Name: "out", EnvVars: []string{"NATTER_OUT"}, Required: true,
				Usage: "the archive file to write (replaced only once the export is complete)"}}, uploadFlags()...)...),
		Action: func(c *cli.Context) error {
			blobs, err := openUploads(c)
			if err != nil {
				return err
			}
			return withStore(c, func(ctx context.Context, store *persist.Store) error {
				w, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Workspace, error) {
					return tx.WorkspaceGetByRef(ctx, c.String("workspace"))
				})
				if err != nil {
					return fmt.Errorf("--workspace %s: %w", c.String("workspace"), err)
				}
				out := c.String("out")
				// Written beside the destination and renamed at the end, so a failed export
				// never leaves a file that looks like an archive.
				f, err := os.CreateTemp(filepath.Dir(out), ".natter-export-*")
				if err != nil {
					return configError("out", "%v", err)
				}
				defer os.Remove(f.Name())
				defer f.Close()
				m, err := archive.Export(ctx, archive.Options{Store: store, Blobs: blobs,
					Scope: persist.ArchiveScope{WorkspaceID: w.ID}}, f)
				if err != nil {
					return err
				}
				if err := f.Sync(); err != nil {
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
				if err := os.Rename(f.Name(), out); err != nil {
					return err
				}
				return report(c, m, "workspace %s (%s) exported to %s: %d people and bots, %d channels, %d direct "+
					"conversations, %d messages, %d uploads (%d missing from the upload store)",
					w.Slug, w.ID, out, m.Counts[archive.EntryUsers], m.Counts[archive.EntryChannels],
					m.Counts[archive.EntryDMs], m.Counts[archive.EntryMessages], m.Counts["upload_bytes"], m.Counts["missing_uploads"])
			})
		},
	}
}
