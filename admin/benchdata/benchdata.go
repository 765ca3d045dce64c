// Package benchdata is `natter bench --mode data`: it seeds a large workspace and a small one
// (the same people and channels, different history) straight into Postgres through persist's
// own write paths, then times every read the web client makes, over HTTP against a running
// server on the same database, as a person who has read nothing and one who has read
// everything, and posting throughput before and after the history is written.
package benchdata

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/natterchat/natter/persist"
)

// Config is one run.
type Config struct {
	// Store is the database the server at Base serves.
	Store *persist.Store
	// DatabaseURL is the same database, for the history's COPY, VACUUM ANALYZE and the
	// unread check.
	DatabaseURL string
	// Base is the server's URL (loopback).
	Base string
	// Messages, Channels and People size the large workspace; BaselineMessages is the small
	// one's history (same people and channels).
	Messages, Channels, People, BaselineMessages int
	// Iterations is how many times each read is timed, per workspace and persona.
	Iterations int
	// Posters and PostFor shape the posting runs (closed loop over HTTP).
	Posters int
	PostFor time.Duration
	Seed    uint64
	Out     io.Writer
	// Reuse times the reads again on the workspaces the last run seeded in this database
	// (with its --people and --posters) instead of seeding new ones: the history of a million
	// messages is written once and measured under each build. The first posting run goes to
	// that run's posting workspace, which holds its posts by now.
	Reuse bool
	// Flood, after the reads are timed, posts this many messages without a word of the
	// vocabulary into the large workspace's busiest channel (a bot's stream, say), analyses
	// the table and times the searches again: its newest messages then lack every word that
	// is common in its history (docs/performance.md, "Search: bounded work per query").
	Flood int
}

// Run seeds, times and prints.
func Run(ctx context.Context, cfg Config) error {
	out := cfg.Out
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var (
		sd   seeded
		conn *pgx.Conn
		err  error
	)
	if conn, err = pgx.Connect(ctx, cfg.DatabaseURL); err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if cfg.Reuse {
		if sd, err = reuse(ctx, cfg, conn); err == nil {
			err = sd.postReused(ctx, cfg, client)
		}
	} else {
		sd, err = seed(ctx, cfg, client, conn)
	}
	if err != nil {
		return err
	}
	p, small, large, tokens := sd.p, sd.small, sd.large, sd.tokens
	// A year of history would have been vacuumed and analysed by autovacuum many times over.
	if _, err := conn.Exec(ctx, `VACUUM (ANALYZE) messages, reactions, reaction_counts, thread_states, read_receipts, events, channels, dms, dm_members, workspace_members, users`); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	for _, w := range []*world{small, large} {
		for _, u := range []persist.User{p.nothing(), p.everything()} {
			n, err := checkUnread(ctx, conn, client, cfg.Base, tokens[u.ID], w, u.ID)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "data: unread counts of %s in %s: exact in %d conversations\n", u.Handle, w.ws.Slug, n)
		}
	}

	reads := clientReads(vocabulary[0], vocabulary[len(vocabulary)-3])
	if err := timeTable(ctx, cfg, client, sd, reads); err != nil {
		return err
	}
	if cfg.Flood > 0 {
		if err := floodAndSearch(ctx, cfg, client, conn, sd, reads); err != nil {
			return err
		}
	}
	postFull, err := postRun(ctx, client, cfg.Base, large.busiest.ID, sd.posterTokens, cfg.PostFor)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "data: posting into the busiest channel (%d messages) of the large workspace: %s (the first run's posts/s, into %s, are %.2f× these)\n",
		large.busiest.LastSeq, postFull, sd.emptyLabel, sd.postEmpty.rate/postFull.rate)
	return nil
}

// timeTable times each read for both readers in both workspaces and prints the table.
func timeTable(ctx context.Context, cfg Config, client *http.Client, sd seeded, reads []read) error {
	tw := tabwriter.NewWriter(cfg.Out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "read\treader\t%d msgs p50\tp99\t%d msgs p50\tp99\tratio p50\tratio p99\t\n", cfg.BaselineMessages, cfg.Messages)
	for _, rd := range reads {
		for _, reader := range []struct {
			name string
			u    persist.User
		}{{"read nothing", sd.p.nothing()}, {"read all", sd.p.everything()}} {
			t, err := timeReads(ctx, client, cfg.Base, sd.tokens[reader.u.ID], cfg.Iterations, rd.path(sd.small, reader.u.ID), rd.path(sd.large, reader.u.ID))
			if err != nil {
				return fmt.Errorf("%s: %w", rd.name, err)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t\n", rd.name, reader.name, ms(t[0].p50), ms(t[0].p99), ms(t[1].p50), ms(t[1].p99),
				float64(t[1].p50)/float64(t[0].p50), float64(t[1].p99)/float64(t[0].p99))
		}
	}
	return tw.Flush()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func strconv36(n int64) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	var b []byte
	for ; n > 0; n /= 36 {
		b = append([]byte{digits[n%36]}, b...)
	}
	return string(b)
}

// postResult is one posting run.
type postResult struct {
	posts    int
	rate     float64
	p50, p99 time.Duration
}

func (r postResult) String() string {
	return fmt.Sprintf("%d posts, %.0f posts/s, p50 %s, p99 %s", r.posts, r.rate, ms(r.p50), ms(r.p99))
}

// postRun posts from each token in a closed loop for d into one channel.
func postRun(ctx context.Context, c *http.Client, base, channelID string, tokens []string, d time.Duration) (postResult, error) {
	deadline := time.Now().Add(d)
	res, err := postLoop(ctx, c, base, channelID, tokens, func(int64) bool { return time.Now().Before(deadline) },
		func(i int) func() string {
			// The posts have the seeded history's word mix: a posting run into the large
			// workspace is the newest of its history for every later --reuse run, whose
			// searches walk the newest messages first and whose span estimates assume the
			// words spread evenly over time (docs/performance.md, "Figures").
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
			words := wordZipf(r)
			return func() string { return body(r, words) }
		})
	res.rate = float64(res.posts) / d.Seconds()
	return res, err
}

// postLoop posts from each token in a closed loop into one channel while more(the posts
// claimed so far) allows, each token's bodies drawn from bodies(its index); rate is left to the
// caller.
func postLoop(ctx context.Context, c *http.Client, base, channelID string, tokens []string, more func(int64) bool, bodies func(int) func() string) (postResult, error) {
	var mu sync.Mutex
	var all []time.Duration
	var failed atomic.Value
	var claimed atomic.Int64
	var wg sync.WaitGroup
	for i, token := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			next := bodies(i)
			for more(claimed.Add(1) - 1) {
				raw, _ := json.Marshal(map[string]string{"body": next()})
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/channels/"+channelID+"/messages", bytes.NewReader(raw))
				if err != nil {
					failed.Store(err)
					return
				}
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				start := time.Now()
				resp, err := c.Do(req)
				if err != nil {
					failed.Store(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					failed.Store(fmt.Errorf("post: status %d", resp.StatusCode))
					return
				}
				mine = append(mine, time.Since(start))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		return postResult{}, err
	}
	if len(all) == 0 {
		return postResult{}, fmt.Errorf("post: nothing posted")
	}
	slices.Sort(all)
	return postResult{posts: len(all), p50: all[len(all)/2], p99: all[len(all)*99/100]}, nil
}

// listed is a conversation of a listing, as far as the unread check reads it.
type listed struct {
	ID          string `json:"id"`
	UnreadCount int64  `json:"unread_count"`
}

// checkUnread compares the channel and DM listings' unread counts with the definition (live
// root messages by others after the reader's mark), counted straight from the tables.
func checkUnread(ctx context.Context, conn *pgx.Conn, c *http.Client, base, token string, w *world, userID string) (int, error) {
	want := map[string]int64{}
	rows, err := conn.Query(ctx, `SELECT p.id, (SELECT count(*) FROM messages m
			WHERE (m.channel_id = p.id OR m.dm_id = p.id) AND m.channel_seq > coalesce(r.last_read_seq, 0)
				AND m.deleted_at IS NULL AND m.author_id <> $2)
		FROM (SELECT id FROM channels WHERE workspace_id = $1
			UNION ALL SELECT dm_id FROM dm_members WHERE workspace_id = $1 AND user_id = $2) p
		LEFT JOIN read_receipts r ON r.scope_id = p.id AND r.user_id = $2`, w.ws.ID, userID)
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return 0, err
		}
		want[id] = n
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var got struct {
		Channels      []listed `json:"channels"`
		Conversations []listed `json:"conversations"`
	}
	for _, path := range []string{"/api/workspaces/" + w.ws.ID + "/channels", "/api/dms?workspace_id=" + w.ws.ID} {
		if err := getJSON(ctx, c, base+path, token, &got); err != nil {
			return 0, err
		}
	}
	n := 0
	for _, l := range [][]listed{got.Channels, got.Conversations} {
		for _, e := range l {
			if want[e.ID] != e.UnreadCount {
				return n, fmt.Errorf("unread count of %s: the listing says %d, the messages %d", e.ID, e.UnreadCount, want[e.ID])
			}
			n++
		}
	}
	return n, nil
}

func getJSON(ctx context.Context, c *http.Client, u, token string, v any) error {
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
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
