package admin

import (
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/natterchat/natter/admin/bench"
	"github.com/natterchat/natter/admin/benchdata"
	"github.com/natterchat/natter/persist"
)

// benchDataMode is `natter bench --mode data`: the package bench talks to a server over HTTP
// only, and this mode also writes its history straight into the server's database.
func benchDataMode() bench.Mode {
	return bench.Mode{
		Name: "data",
		Flags: []cli.Flag{
			dataDirFlag(),
			databaseURLFlag(),
			&cli.IntFlag{Name: "messages", EnvVars: []string{"NATTER_BENCH_MESSAGES"}, Value: 1000000, Usage: "data mode: messages of the large workspace"},
			&cli.IntFlag{Name: "channels", EnvVars: []string{"NATTER_BENCH_CHANNELS"}, Value: 1000, Usage: "data mode: channels of each workspace"},
			&cli.IntFlag{Name: "people", EnvVars: []string{"NATTER_BENCH_PEOPLE"}, Value: 20000, Usage: "data mode: members of each workspace"},
			&cli.IntFlag{Name: "baseline-messages", EnvVars: []string{"NATTER_BENCH_BASELINE_MESSAGES"}, Value: 10000, Usage: "data mode: messages of the small workspace every read is compared with"},
			&cli.IntFlag{Name: "iterations", EnvVars: []string{"NATTER_BENCH_ITERATIONS"}, Value: 100, Usage: "data mode: timed runs of each read, per workspace and reader"},
			&cli.DurationFlag{Name: "post-for", EnvVars: []string{"NATTER_BENCH_POST_FOR"}, Value: 15 * time.Second, Usage: "data mode: length of each posting run (--posters posters, closed loop)"},
			&cli.Uint64Flag{Name: "seed", EnvVars: []string{"NATTER_BENCH_SEED"}, Value: 1, Usage: "data mode: seed of the generated history"},
			&cli.IntFlag{Name: "flood", EnvVars: []string{"NATTER_BENCH_FLOOD"}, Usage: "data mode: after the reads, post this many messages without a vocabulary word into the large workspace and time its searches again"},
			&cli.BoolFlag{Name: "reuse", EnvVars: []string{"NATTER_BENCH_REUSE"}, Usage: "data mode: time the reads on the workspaces the last run seeded in this database (same --people) instead of seeding new ones"},
		},
		Run: runBenchData,
	}
}

func runBenchData(c *cli.Context) error {
	base := c.StringSlice("url")[0]
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return usageErrorf("invalid configuration: --url: %q must be http://host:port", base)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return usageErrorf("invalid configuration: --url: the data bench only targets a loopback address, not %q", u.Hostname())
	}
	cfg := benchdata.Config{Base: base, Messages: c.Int("messages"), Channels: c.Int("channels"), People: c.Int("people"),
		BaselineMessages: c.Int("baseline-messages"), Iterations: c.Int("iterations"), Posters: c.Int("posters"),
		PostFor: c.Duration("post-for"), Seed: c.Uint64("seed"), Reuse: c.Bool("reuse"), Flood: c.Int("flood"), Out: c.App.Writer}
	switch {
	case cfg.Messages < 1 || cfg.BaselineMessages < 1:
		return usageErrorf("invalid configuration: --messages and --baseline-messages must be positive")
	case cfg.Channels < 1:
		return usageErrorf("invalid configuration: --channels must be positive")
	case cfg.People < 10:
		return usageErrorf("invalid configuration: --people must be at least 10")
	case cfg.Posters < 1 || cfg.Posters > cfg.People-3:
		return usageErrorf("invalid configuration: --posters must be 1 to --people minus 3")
	case cfg.Iterations < 1:
		return usageErrorf("invalid configuration: --iterations must be positive")
	case cfg.Flood < 0:
		return usageErrorf("invalid configuration: --flood must not be negative")
	}
	logger := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := openDatabase(c.Context, c, logger, persist.Config{MaxConns: 32}, false)
	if err != nil {
		return err
	}
	defer db.Close(c.Context)
	cfg.Store, cfg.DatabaseURL = db.Store, db.URL
	return benchdata.Run(c.Context, cfg)
}
