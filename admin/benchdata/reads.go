package benchdata

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// read is one request the web client makes on opening a workspace or browsing it.
type read struct {
	name string
	path func(w *world, reader string) string
}

// clientReads are the reads of the web client (server/web): opening (me, workspaces, the
// event tail, channels with unread counts, direct conversations), a channel's latest page and
// scrolling (before, after, around a message), a direct conversation, a thread, the member
// directory (all, a name, a role) and search (a common word, a rare one, in one channel,
// newest first).
func clientReads(common, rare string) []read {
	q := url.QueryEscape
	return []read{
		{"me", func(*world, string) string { return "/api/me" }},
		{"workspaces", func(*world, string) string { return "/api/workspaces" }},
		{"event tail", func(w *world, _ string) string {
			return "/api/realtime/events?include_tail=true&limit=1&workspace_id=" + w.ws.ID
		}},
		{"channel list", func(w *world, _ string) string { return "/api/workspaces/" + w.ws.ID + "/channels" }},
		{"DM list", func(w *world, _ string) string { return "/api/dms?workspace_id=" + w.ws.ID }},
		{"history latest", func(w *world, _ string) string {
			return "/api/channels/" + w.busiest.ID + "/messages?limit=100&latest=true"
		}},
		{"history before", func(w *world, _ string) string {
			return "/api/channels/" + w.busiest.ID + "/messages?limit=100&before_seq=" + strconv.FormatInt(w.busiest.LastSeq/2, 10)
		}},
		{"history after", func(w *world, _ string) string {
			return "/api/channels/" + w.busiest.ID + "/messages?limit=100&after_seq=" + strconv.FormatInt(w.busiest.LastSeq/2, 10)
		}},
		{"history around", func(w *world, _ string) string {
			return "/api/channels/" + w.busiest.ID + "/messages?limit=100&around_seq=" + strconv.FormatInt(w.busiest.LastSeq/3, 10)
		}},
		{"DM latest", func(w *world, reader string) string {
			return "/api/dms/" + w.personaD[reader] + "/messages?limit=100&latest=true"
		}},
		{"thread", func(w *world, _ string) string { return "/api/messages/" + w.thread + "/thread?latest=true" }},
		{"members", func(w *world, _ string) string { return "/api/workspaces/" + w.ws.ID + "/members?limit=100" }},
		{"members q", func(w *world, _ string) string { return "/api/workspaces/" + w.ws.ID + "/members?limit=100&q=grace" }},
		{"members role", func(w *world, _ string) string {
			return "/api/workspaces/" + w.ws.ID + "/members?limit=100&role=moderator"
		}},
		{"search common", func(w *world, _ string) string {
			return "/api/search?limit=30&workspace_id=" + w.ws.ID + "&q=" + q(common)
		}},
		{"search common newest", func(w *world, _ string) string {
			return "/api/search?limit=30&sort=newest&workspace_id=" + w.ws.ID + "&q=" + q(common)
		}},
		{"search rare", func(w *world, _ string) string {
			return "/api/search?limit=30&workspace_id=" + w.ws.ID + "&q=" + q(rare)
		}},
		{"search two words", func(w *world, _ string) string {
			return "/api/search?limit=30&workspace_id=" + w.ws.ID + "&q=" + q(common+" "+vocabulary[40])
		}},
		{"search in channel", func(w *world, _ string) string {
			return "/api/search?limit=30&workspace_id=" + w.ws.ID + "&channel_id=" + w.busiest.ID + "&q=" + q(common)
		}},
	}
}

// timing is a read's latency distribution.
type timing struct{ p50, p99 time.Duration }

// timeRead runs one read n times, one after the other, after one untimed warm-up.
func timeRead(ctx context.Context, c *http.Client, base, token, path string, n int) (timing, error) {
	ds := make([]time.Duration, 0, n)
	for i := range n + 1 {
		start := time.Now()
		if err := get(ctx, c, base+path, token); err != nil {
			return timing{}, err
		}
		if i > 0 {
			ds = append(ds, time.Since(start))
		}
	}
	slices.Sort(ds)
	return timing{p50: ds[len(ds)/2], p99: ds[min(len(ds)-1, len(ds)*99/100)]}, nil
}

func get(ctx context.Context, c *http.Client, u, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, body)
	}
	return nil
}
