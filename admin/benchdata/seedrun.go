package benchdata

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/natterchat/natter/persist"
)

// seeded is what a run measures: the people, the two workspaces, the readers' and posters'
// sessions, and the first posting run.
type seeded struct {
	p            people
	small, large *world
	posting      *world // set by reuse
	tokens       map[string]string
	posterTokens []string
	postEmpty    postResult
	emptyLabel   string
}

// seed writes the people, the workspaces and their history, and posts into an empty workspace
// before the history is written.
func seed(ctx context.Context, cfg Config, client *http.Client, conn *pgx.Conn) (seeded, error) {
	out := cfg.Out
	tag := "b" + strings.ToLower(strconv36(time.Now().Unix()))
	start := time.Now()
	p, err := seedPeople(ctx, cfg.Store, cfg.People, tag)
	if err != nil {
		return seeded{}, err
	}
	fmt.Fprintf(out, "data: %d people in %s\n", cfg.People, time.Since(start).Round(time.Millisecond))
	sd := seeded{p: p, emptyLabel: "an empty database"}
	if err := sd.sessions(ctx, cfg); err != nil {
		return sd, err
	}
	start = time.Now()
	if sd.small, err = seedWorkspace(ctx, cfg.Store, p, tag+"-small", cfg.Channels, cfg.Seed); err != nil {
		return sd, err
	}
	if sd.large, err = seedWorkspace(ctx, cfg.Store, p, tag+"-large", cfg.Channels, cfg.Seed+1); err != nil {
		return sd, err
	}
	fmt.Fprintf(out, "data: two workspaces of %d members, %d channels, %d direct conversations each in %s\n",
		cfg.People, cfg.Channels, len(sd.large.dms), time.Since(start).Round(time.Millisecond))

	// The first posting run goes to a workspace of its own, before any history is written.
	empty, err := seedWorkspace(ctx, cfg.Store, p, tag+"-posting", 1, cfg.Seed)
	if err != nil {
		return sd, err
	}
	if sd.postEmpty, err = postRun(ctx, client, cfg.Base, empty.channels[0].ID, sd.posterTokens, cfg.PostFor); err != nil {
		return sd, err
	}
	fmt.Fprintf(out, "data: posting into an empty database: %s\n", sd.postEmpty)
	for i, s := range []struct {
		w *world
		n int
	}{{sd.small, cfg.BaselineMessages}, {sd.large, cfg.Messages}} {
		start := time.Now()
		if err := s.w.seedHistory(ctx, conn, p, s.n, cfg.Seed+uint64(i)); err != nil {
			return sd, err
		}
		d := time.Since(start)
		fmt.Fprintf(out, "data: %d messages into %s in %s (%.0f/s)\n", s.n, s.w.ws.Slug, d.Round(time.Second), float64(s.n)/d.Seconds())
		if err := s.w.findBusiest(ctx, cfg.Store, p); err != nil {
			return sd, err
		}
		if err := s.w.readEverything(ctx, cfg.Store, p); err != nil {
			return sd, fmt.Errorf("read marks: %w", err)
		}
	}
	return sd, nil
}

// sessions signs in the two readers, the owner and the posters.
func (sd *seeded) sessions(ctx context.Context, cfg Config) error {
	sd.tokens = map[string]string{}
	err := cfg.Store.WithTx(ctx, func(tx *persist.Tx) error {
		for i, u := range sd.p.users[:3+cfg.Posters] {
			_, raw, err := tx.SessionCreate(ctx, u.ID, "bench")
			if err != nil {
				return err
			}
			sd.tokens[u.ID] = raw
			if i >= 3 {
				sd.posterTokens = append(sd.posterTokens, raw)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	return nil
}

// reuse finds the workspaces the last seeding run left in the database and what the reads need
// to know of them.
func reuse(ctx context.Context, cfg Config, conn *pgx.Conn) (seeded, error) {
	var large string
	err := conn.QueryRow(ctx, `SELECT slug FROM workspaces WHERE slug LIKE 'b%-large' ORDER BY created_at DESC LIMIT 1`).Scan(&large)
	if err != nil {
		return seeded{}, fmt.Errorf("no seeded workspaces to reuse: %w", err)
	}
	tag := strings.TrimSuffix(large, "-large")
	sd := seeded{}
	rows, err := conn.Query(ctx, `SELECT id, handle FROM users WHERE handle LIKE $1 || '%'`, tag)
	if err != nil {
		return sd, err
	}
	byIndex := map[int]persist.User{}
	for rows.Next() {
		var u persist.User
		var handle string
		if err := rows.Scan(&u.ID, &handle); err != nil {
			return sd, err
		}
		if i, err := strconv.Atoi(strings.TrimPrefix(handle, tag)); err == nil {
			u.Handle, u.Kind = handle, persist.KindHuman
			byIndex[i] = u
		}
	}
	if err := rows.Err(); err != nil {
		return sd, err
	}
	for i := range len(byIndex) {
		u, ok := byIndex[i]
		if !ok {
			return sd, fmt.Errorf("reuse: person %d of %s is missing", i, tag)
		}
		sd.p.users = append(sd.p.users, u)
	}
	if len(sd.p.users) < 3+cfg.Posters {
		return sd, fmt.Errorf("reuse: %s has %d people, fewer than the readers and %d posters", tag, len(sd.p.users), cfg.Posters)
	}
	if err := sd.sessions(ctx, cfg); err != nil {
		return sd, err
	}
	worlds := map[string]*world{}
	for _, kind := range []string{"small", "large", "posting"} {
		w := &world{}
		if err := conn.QueryRow(ctx, `SELECT id, slug FROM workspaces WHERE slug = $1`, tag+"-"+kind).Scan(&w.ws.ID, &w.ws.Slug); err != nil {
			return sd, fmt.Errorf("reuse: workspace %s-%s: %w", tag, kind, err)
		}
		err := cfg.Store.WithTx(ctx, func(tx *persist.Tx) (err error) {
			w.channels, err = tx.ChannelList(ctx, persist.ActorFor(sd.p.owner()), w.ws.ID)
			return err
		})
		if err != nil {
			return sd, err
		}
		if err := w.findBusiest(ctx, cfg.Store, sd.p); err != nil {
			return sd, err
		}
		err = conn.QueryRow(ctx, `SELECT coalesce((SELECT ts.root_message_id FROM thread_states ts
			JOIN messages m ON m.id = ts.root_message_id AND m.channel_id IS NOT NULL
			WHERE ts.workspace_id = $1 ORDER BY ts.last_thread_seq DESC, ts.root_message_id LIMIT 1), '')`, w.ws.ID).Scan(&w.thread)
		if err != nil {
			return sd, err
		}
		worlds[kind] = w
	}
	sd.small, sd.large, sd.posting = worlds["small"], worlds["large"], worlds["posting"]
	return sd, nil
}

// postReused is reuse's first posting run, into the posting workspace of the run it reuses.
func (sd *seeded) postReused(ctx context.Context, cfg Config, client *http.Client) error {
	var posts int64
	for _, c := range sd.posting.channels {
		posts += c.LastSeq
	}
	sd.emptyLabel = fmt.Sprintf("the posting workspace %s (%d messages)", sd.posting.ws.Slug, posts)
	var err error
	if sd.postEmpty, err = postRun(ctx, client, cfg.Base, sd.posting.channels[0].ID, sd.posterTokens, cfg.PostFor); err != nil {
		return err
	}
	fmt.Fprintf(cfg.Out, "data: reusing %s; posting into %s: %s\n", strings.TrimSuffix(sd.posting.ws.Slug, "-posting"), sd.emptyLabel, sd.postEmpty)
	return nil
}
