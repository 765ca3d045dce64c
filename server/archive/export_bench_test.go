package archive_test

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server/archive"
)

// BenchmarkExport exports a workspace of one channel holding n messages (a tenth of them with
// five replies each, every message with a reaction) and reports the peak heap while it runs,
// sampled every 2 ms: the figure must not grow with n.
//
//	go test -run XXX -bench BenchmarkExport -benchtime 3x ./server/archive/
func BenchmarkExport(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("Messages%d", n), func(b *testing.B) {
			store := persisttest.NewStore(b)
			owner := persisttest.User(b, store, nil)
			ws := persisttest.Workspace(b, store, owner.ID)
			ch := persisttest.Channel(b, store, persist.ActorFor(owner), ws.ID, "big")
			seed(b, persisttest.StoreURL(b, store), ws.ID, ch.ID, owner.ID, n)
			ctx := context.Background()
			var peak atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				runtime.GC()
				done := make(chan struct{})
				sampled := make(chan struct{})
				go func() {
					defer close(sampled)
					var ms runtime.MemStats
					for {
						runtime.ReadMemStats(&ms)
						if ms.HeapAlloc > peak.Load() {
							peak.Store(ms.HeapAlloc)
						}
						select {
						case <-done:
							return
						case <-time.After(2 * time.Millisecond):
						}
					}
				}()
				m, err := archive.Export(ctx, archive.Options{Store: store, Scope: persist.ArchiveScope{WorkspaceID: ws.ID}}, io.Discard)
				close(done)
				<-sampled
				if err != nil {
					b.Fatal(err)
				}
				if got := m.Counts[archive.EntryMessages]; got != int64(n+n/10*5) {
					b.Fatalf("exported %d messages", got)
				}
			}
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
		})
	}
}

// seed writes n roots, five replies to every tenth and a reaction on each, with set-based SQL.
func seed(b *testing.B, url, wsID, chID, userID string, n int) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		`INSERT INTO messages (id, route_id, workspace_id, channel_id, author_id, thread_root_id, channel_seq, body, created_at)
		 SELECT 'msg_' || lpad(i::text, 26, '0'), 'M' || lpad(i::text, 16, '0'), $1, $2, $3, 'msg_' || lpad(i::text, 26, '0'), i,
		        'message number ' || i || ' with a few words of text to make it look like chat', now()
		 FROM generate_series(1, $4::int) i`,
		`INSERT INTO messages (id, workspace_id, channel_id, author_id, parent_message_id, thread_root_id, thread_seq, body, created_at)
		 SELECT 'msg_r' || lpad((i * 10 + j)::text, 25, '0'), $1, $2, $3, 'msg_' || lpad(i::text, 26, '0'),
		        'msg_' || lpad(i::text, 26, '0'), j, 'a reply', now()
		 FROM generate_series(10, $4::int, 10) i, generate_series(1, 5) j`,
		`INSERT INTO thread_states (root_message_id, workspace_id, last_thread_seq, reply_count, last_reply_at, last_reply_author_ids)
		 SELECT 'msg_' || lpad(i::text, 26, '0'), $1, 5, 5, now(), ARRAY[$3::text] FROM generate_series(10, $4::int, 10) i WHERE $2::text <> ''`,
		`INSERT INTO reactions (message_id, emoji, user_id, workspace_id, created_at)
		 SELECT id, '👍', $3, $1, now() FROM messages WHERE channel_id = $2 AND $4::int > 0`,
		`UPDATE channels SET last_seq = $4 WHERE id = $2 AND workspace_id = $1 AND $3 <> ''`,
	} {
		if _, err := conn.Exec(ctx, q, wsID, chID, userID, n); err != nil {
			b.Fatalf("seed: %v\n%s", err, q)
		}
	}
	if _, err := conn.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
}
