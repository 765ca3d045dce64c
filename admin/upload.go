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

// uploadFlags choose the upload store: a directory, or an S3-compatible bucket.
func uploadFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "upload-dir", EnvVars: []string{"NATTER_UPLOAD_DIR"},
			Usage: "directory of uploaded files (objects named upload-<random>); empty is <data-dir>/uploads"},
		&cli.StringFlag{Name: "upload-s3-endpoint", EnvVars: []string{"NATTER_UPLOAD_S3_ENDPOINT"},
			Usage: "base URL of an S3-compatible store to keep uploads in instead of --upload-dir (path-style requests)"},
		&cli.StringFlag{Name: "upload-s3-bucket", EnvVars: []string{"NATTER_UPLOAD_S3_BUCKET"}, Usage: "the bucket of --upload-s3-endpoint"},
		&cli.StringFlag{Name: "upload-s3-region", EnvVars: []string{"NATTER_UPLOAD_S3_REGION"}, Value: "us-east-1",
			Usage: "the region requests to --upload-s3-endpoint are signed for"},
		&cli.StringFlag{Name: "upload-s3-access-key-id", EnvVars: []string{"NATTER_UPLOAD_S3_ACCESS_KEY_ID"}, Usage: "the S3 access key id"},
		&cli.StringFlag{Name: "upload-s3-secret-access-key", EnvVars: []string{"NATTER_UPLOAD_S3_SECRET_ACCESS_KEY"}, Usage: "the S3 secret access key"},
	}
}

// openUploads opens the upload store: the S3 bucket of --upload-s3-endpoint when set, else the
// directory --upload-dir, or <data-dir>/uploads.
func openUploads(c *cli.Context) (blob.Store, error) {
	if endpoint := c.String("upload-s3-endpoint"); endpoint != "" {
		s, err := blob.NewS3(blob.S3Config{Endpoint: endpoint, Bucket: c.String("upload-s3-bucket"),
			Region: c.String("upload-s3-region"), AccessKeyID: c.String("upload-s3-access-key-id"),
			SecretAccessKey: c.String("upload-s3-secret-access-key")})
		if err != nil {
			return nil, configError("upload-s3-endpoint", "%v", err)
		}
		return s, nil
	}
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
			Flags: adminFlags(uploadFlags()...),
			Action: func(c *cli.Context) error {
				blobs, err := openUploads(c)
				if err != nil {
					return err
				}
				return withStore(c, func(ctx context.Context, store *persist.Store) error {
					res, err := server.DeleteQueuedUploads(ctx, store, blobs)
					if err != nil {
						return err
					}
					if err := report(c, map[string]any{"deleted": res.Deleted, "failed": res.Failed},
						"deleted %d upload objects; %d failed and stay queued", res.Deleted, res.Failed); err != nil {
						return err
					}
					if res.Failed > 0 {
						return fmt.Errorf("%d upload objects could not be deleted", res.Failed)
					}
					return nil
				})
			},
		}},
	}
}
