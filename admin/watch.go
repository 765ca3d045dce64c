package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/admin/bench"
)

func watchCommand() *cli.Command {
	return &cli.Command{
		Name: "watch",
		Usage: "open a realtime WebSocket to a Natter server and print each event it sends, one JSON envelope a line, " +
			"until Ctrl-C or the server closes the socket",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", EnvVars: []string{"NATTER_URL"}, Value: "http://127.0.0.1:8080", Usage: "base URL of the server"},
			&cli.StringFlag{Name: "token", EnvVars: []string{"NATTER_TOKEN"},
				Usage: "bearer token (sst_ session or ccb_ bot); empty relies on the development fallback of natter dev"},
			&cli.StringFlag{Name: "workspace", EnvVars: []string{"NATTER_WORKSPACE"},
				Usage: "the workspace's id or slug (a bot token implies its own; default: the caller's first)"},
			&cli.StringFlag{Name: "after-cursor", EnvVars: []string{"NATTER_AFTER_CURSOR"},
				Usage: "send the retained events after this cursor first (empty: only new events)"},
		},
		Action: runWatch,
	}
}

func runWatch(c *cli.Context) error {
	base := strings.TrimSuffix(c.String("url"), "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return configError("url", "%q must be http(s)://host[:port]", base)
	}
	ctx := c.Context
	api := &bench.API{Base: base, Token: c.String("token"), Client: &http.Client{Timeout: 30 * time.Second}}
	workspace, err := watchWorkspace(ctx, api, c.String("workspace"))
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	query := url.Values{}
	if workspace != "" {
		query.Set("workspace_id", workspace)
	}
	after := c.String("after-cursor")
	if after == "" {
		// Only new events: start from the tail the caller may see now.
		var page struct {
			TailCursor string `json:"tail_cursor"`
		}
		if _, err := api.Do(ctx, http.MethodGet, "/api/realtime/events?limit=1&include_tail=true&"+query.Encode(), nil, &page); err != nil {
			return fmt.Errorf("watch: read the tail cursor: %w", err)
		}
		after = page.TailCursor
	}
	if after != "" {
		query.Set("after_cursor", after)
	}
	header := http.Header{}
	if api.Token != "" {
		header.Set("Authorization", "Bearer "+api.Token)
	}
	wsURL := "ws" + strings.TrimPrefix(base, "http") + "/api/realtime/ws?" + query.Encode()
	conn, br, _, err := ws.Dialer{Header: ws.HandshakeHeaderHTTP(header), Timeout: 30 * time.Second}.Dial(ctx, wsURL)
	if err != nil {
		return fmt.Errorf("watch: open the socket: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	var r io.ReadWriter = conn
	if br != nil {
		r = struct {
			io.Reader
			io.Writer
		}{io.MultiReader(br, conn), conn}
	}
	fmt.Fprintf(c.App.ErrWriter, "watching %s (after cursor %q); Ctrl-C stops\n", wsURL, after)
	for {
		data, err := wsutil.ReadServerText(r)
		var closed wsutil.ClosedError
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &closed):
			return fmt.Errorf("watch: the server closed the socket: %d %s", closed.Code, closed.Reason)
		case err != nil:
			return fmt.Errorf("watch: read: %w", err)
		}
		fmt.Fprintln(c.App.Writer, string(data))
	}
}

// watchWorkspace resolves --workspace (an id or a slug) to an id; empty stays empty for a bot
// token, whose workspace is implied, and is the caller's first workspace otherwise.
func watchWorkspace(ctx context.Context, api *bench.API, ref string) (string, error) {
	if strings.HasPrefix(ref, "wsp_") || (ref == "" && strings.HasPrefix(api.Token, "ccb_")) {
		return ref, nil
	}
	var list struct {
		Workspaces []struct{ ID, Slug string } `json:"workspaces"`
	}
	if _, err := api.Do(ctx, http.MethodGet, "/api/workspaces", nil, &list); err != nil {
		return "", fmt.Errorf("list workspaces: %w", err)
	}
	for _, w := range list.Workspaces {
		if ref == "" || w.Slug == ref {
			return w.ID, nil
		}
	}
	if ref == "" {
		return "", errors.New("the caller belongs to no workspace")
	}
	return "", fmt.Errorf("--workspace %s: the caller belongs to no workspace with that slug", ref)
}
