package admin

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/server/blob"
)

func uploadDirFlag() cli.Flag {
	return &cli.StringFlag{Name: "upload-dir", EnvVars: []string{"NATTER_UPLOAD_DIR"},
		Usage: "directory of uploaded files (objects named upload-<random>); empty is <data-dir>/uploads"}
}

// openUploads opens the upload store of --upload-dir, or <data-dir>/uploads.
func openUploads(c *cli.Context) (*blob.Disk, error) {
	dir := c.String("upload-dir")
	if dir == "" {
		dir = filepath.Join(c.String("data-dir"), "uploads")
	}
	d, err := blob.NewDisk(dir)
	if err != nil {
		return nil, configError("upload-dir", "%v", err)
	}
	return d, nil
}

func uploadsCommand() *cli.Command {
	return &cli.Command{
		Name:  "uploads",
		Usage: "uploaded files",
		Subcommands: []*cli.Command{{
			Name: "retry-deletions",
			Usage: "delete the upload objects still queued by workspace deletions (a server also retries them when it " +
				"starts); prints how many were deleted and how many failed again",
			Flags: []cli.Flag{databaseURLFlag(), dataDirFlag(), uploadDirFlag()},
			Action: func(c *cli.Context) error {
				blobs, err := openUploads(c)
				if err != nil {
					return err
				}
				return withStore(c, func(ctx context.Context, store *persist.Store) error {
					res, err := server.DeleteQueuedUploads(ctx, store, blobs)
					if err != nil {
						return fmt.Errorf("natter admin uploads retry-deletions: %w", err)
					}
					fmt.Fprintf(c.App.Writer, "deleted %d upload objects; %d failed and stay queued\n", res.Deleted, res.Failed)
					if res.Failed > 0 {
						return fmt.Errorf("natter admin uploads retry-deletions: %d upload objects could not be deleted", res.Failed)
					}
					return nil
				})
			},
		}},
	}
}
