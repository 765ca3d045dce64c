package persist_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// BenchmarkPresenceStorm writes a replica's reconnect storm: people coming online in batches of
// 4,096 (as the hub's flush writes them) against one transaction per person (a write per
// handshake), reporting the cost per person.
func BenchmarkPresenceStorm(b *testing.B) {
	store := persisttest.NewStore(b)
	ctx := context.Background()
	people := func(run, n int) []persist.PresenceKey {
		keys := make([]persist.PresenceKey, n)
		for i := range keys {
			keys[i] = persist.PresenceKey{WorkspaceID: fmt.Sprintf("wsp_bench%d_%d", run, i%50), UserID: fmt.Sprintf("usr_%d", i)}
		}
		return keys
	}
	run := 0
	for _, c := range []struct {
		name     string
		n, batch int
	}{{"batched-20000", 20000, 4096}, {"one-by-one-2000", 2000, 1}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				run++
				keys := people(run, c.n)
				replica := fmt.Sprintf("rep_bench_%d", run)
				start := time.Now()
				for i := 0; i < len(keys); i += c.batch {
					if _, _, err := store.PresenceFlush(ctx, replica, time.Minute, keys[i:min(i+c.batch, len(keys))], nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/float64(c.n), "µs/person")
			}
		})
	}
}
