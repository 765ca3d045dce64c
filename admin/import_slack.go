package admin

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/natterchat/natter/admin/slackimport"
	"github.com/natterchat/natter/persist"
)

func importSlackCommand() *cli.Command {
	return &cli.Command{
		Name:      "slack",
		Usage:     "import a Slack export (the zip of Slack's export tool): people, channels, conversations, messages, threads, reactions, pins and files; prints counts and every record skipped",
		ArgsUsage: "EXPORT.zip",
		Flags: adminFlags(append(uploadFlags(),
			&cli.StringFlag{Name: "workspace", Required: true, Usage: "the workspace to import into: its slug or id"},
			&cli.StringFlag{Name: "files", Usage: "a folder of the export's downloaded files: <file id>/<name> or <file id>"},
			&cli.StringFlag{Name: "map-emails", Usage: "a file of address changes, one `old new` pair a line, applied before people are matched"},
		)...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("name the export: natter admin import slack --workspace W EXPORT.zip")
			}
			emails, err := readEmailMap(c.String("map-emails"))
			if err != nil {
				return err
			}
			blobs, err := openUploads(c)
			if err != nil {
				return err
			}
			return withStore(c, func(ctx context.Context, store *persist.Store) error {
				w, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Workspace, error) {
					return tx.WorkspaceGetByRef(ctx, c.String("workspace"))
				})
				if err != nil {
					return err
				}
				o := slackimport.Options{Store: store, WorkspaceID: w.ID, Uploads: blobs, FilesDir: c.String("files"), EmailMap: emails}
				line := progressLine(c.App.ErrWriter)
				if line != nil {
					o.Progress = line.show
				}
				rep, err := slackimport.ImportFile(ctx, c.Args().First(), o)
				line.done()
				if rerr := report(c, rep, "%s", rep.Summary()); rerr != nil && err == nil {
					err = rerr
				}
				return err
			})
		},
	}
}

// readEmailMap reads --map-emails: "old new" (or "old,new") a line; blank lines and # comments
// are passed over.
func readEmailMap(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, configError("map-emails", "%v", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(strings.ReplaceAll(line, ",", " "))
		if len(fields) != 2 || !strings.Contains(fields[0], "@") || !strings.Contains(fields[1], "@") {
			return nil, configError("map-emails", "line %d: want two addresses, the old and the new", n)
		}
		out[strings.ToLower(fields[0])] = strings.ToLower(fields[1])
	}
	if err := sc.Err(); err != nil {
		return nil, configError("map-emails", "%v", err)
	}
	return out, nil
}

// terminalLine is a progress line rewritten in place on a terminal, at most ten times a second.
type terminalLine struct {
	w    io.Writer
	last time.Time
	used bool
}

// progressLine returns a line on w when w is a terminal, nil otherwise (no progress in logs).
func progressLine(w io.Writer) *terminalLine {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &terminalLine{w: w}
}

func (l *terminalLine) show(p slackimport.Progress) {
	if time.Since(l.last) < 100*time.Millisecond {
		return
	}
	l.last, l.used = time.Now(), true
	fmt.Fprintf(l.w, "\r\033[K%s %s · %d messages", p.Place, p.Day, p.Messages)
}

func (l *terminalLine) done() {
	if l != nil && l.used {
		fmt.Fprint(l.w, "\r\033[K")
	}
}
