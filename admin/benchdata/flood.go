package benchdata

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// floodAndSearch posts cfg.Flood messages without a vocabulary word into the large workspace's
// busiest channel, analyses the messages (what autovacuum would do after such a burst: the
// planner's estimates then count the new rows) and times the searches again. The small
// workspace is left as it was: it is the baseline the searches are compared with.
func floodAndSearch(ctx context.Context, cfg Config, client *http.Client, conn *pgx.Conn, sd seeded, reads []read) error {
	start := time.Now()
	res, err := floodRun(ctx, client, cfg.Base, sd.large.busiest.ID, sd.posterTokens, cfg.Flood)
	if err != nil {
		return fmt.Errorf("flood: %w", err)
	}
	if _, err := conn.Exec(ctx, `VACUUM (ANALYZE) messages`); err != nil {
		return fmt.Errorf("flood: vacuum: %w", err)
	}
	fmt.Fprintf(cfg.Out, "data: a flood of %d messages without a vocabulary word into the large workspace's busiest channel in %s (p50 %s); the searches again:\n",
		res.posts, time.Since(start).Round(time.Second), ms(res.p50))
	var searches []read
	for _, rd := range reads {
		if strings.HasPrefix(rd.name, "search") {
			searches = append(searches, rd)
		}
	}
	return timeTable(ctx, cfg, client, sd, searches)
}

// floodRun posts exactly n messages from the tokens in a closed loop, their bodies a monitor's
// heartbeat: numbers and words none of which is in the vocabulary.
func floodRun(ctx context.Context, c *http.Client, base, channelID string, tokens []string, n int) (postResult, error) {
	return postLoop(ctx, c, base, channelID, tokens, func(i int64) bool { return i < int64(n) },
		func(poster int) func() string {
			k := 0
			return func() string {
				k++
				return fmt.Sprintf("heartbeat ok from host %d, sequence %d", poster, k)
			}
		})
}
