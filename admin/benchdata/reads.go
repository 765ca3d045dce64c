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

// warmUps is how many untimed runs of each read come first, per workspace.
const warmUps = 3

// timeReads times one read in each workspace n times, alternating between them, after
// warmUps untimed runs of each: the two workspaces' samples are taken over the same seconds, so
// a burst of load on this shared machine falls on both, not on whichever ran during it.
func timeReads(ctx context.Context, c *http.Client, base, token string, n int, paths ...string) ([]timing, error) {
	ds := make([][]time.Duration, len(paths))
	for i := range warmUps + n {
		for k, path := range paths {
			start := time.Now()
			if err := get(ctx, c, base+path, token); err != nil {
				return nil, err
			}
			if i >= warmUps {
				ds[k] = append(ds[k], time.Since(start))
			}
		}
	}
	out := make([]timing, len(paths))
	for k, d := range ds {
		out[k] = percentiles(d)
	}
	return out, nil
}

// percentiles are the nearest-rank p50 and p99 of samples: the p99 of 100 samples is the
// second slowest, of 50 or fewer the slowest.
func percentiles(ds []time.Duration) timing {
	slices.Sort(ds)
	rank := func(p int) time.Duration { return ds[max(0, (len(ds)*p+99)/100-1)] }
	return timing{p50: rank(50), p99: rank(99)}
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
