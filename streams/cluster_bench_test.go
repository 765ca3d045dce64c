package streams_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natterchat/natter/streams"
)

// BenchmarkClusterNodeRestart measures what a 3-node cluster costs per workspace: it creates
// NATTER_BENCH_STREAMS (default 500) R3 file streams shaped like workspace streams, each with
// one event and one durable consumer (as web push keeps), then restarts one node and times how
// long until it accepts connections and until every stream lists it as a current replica.
// All three nodes share this process, so RSS is theirs together.
//
//	NATTER_BENCH_STREAMS=1000 go test ./streams -run '^$' -bench ClusterNodeRestart -benchtime 1x
func BenchmarkClusterNodeRestart(b *testing.B) {
	n := 500
	if v, err := strconv.Atoi(os.Getenv("NATTER_BENCH_STREAMS")); err == nil && v > 0 {
		n = v
	}
	for range b.N {
		lc, err := streams.StartLocalCluster(streams.LocalClusterConfig{Dir: b.TempDir(), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		nc, err := nats.Connect(lc.NatterURLs(), nats.MaxReconnects(-1))
		if err != nil {
			b.Fatal(err)
		}
		js, _ := jetstream.New(nc)
		ctx := context.Background()
		rss0 := rssMiB()
		start := time.Now()
		for i := range n {
			ws := fmt.Sprintf("wsp_bench%05d", i)
			s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: streams.StreamName(ws), Subjects: []string{streams.EventsSubjects(ws)},
				Storage: jetstream.FileStorage, Replicas: 3})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := js.Publish(ctx, "natter.events."+ws+".ws.bench", []byte(`{}`)); err != nil {
				b.Fatal(err)
			}
			if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "natter_push", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
				b.Fatal(err)
			}
		}
		created := time.Since(start)
		rss1 := rssMiB()

		lc.Stop(0)
		start = time.Now()
		if err := lc.Start(0); err != nil {
			b.Fatal(err)
		}
		ready := time.Since(start)
		for i := 0; i < n; {
			s, err := js.Stream(ctx, streams.StreamName(fmt.Sprintf("wsp_bench%05d", i)))
			if err == nil && currentOn(s.CachedInfo().Cluster, "nats-1") {
				i++
				continue
			}
			time.Sleep(20 * time.Millisecond)
		}
		current := time.Since(start)
		b.ReportMetric(float64(n)/created.Seconds(), "streams_created/s")
		b.ReportMetric(ready.Seconds(), "restart_ready_s")
		b.ReportMetric(current.Seconds(), "restart_all_current_s")
		b.ReportMetric(rss1-rss0, "rss_growth_MiB")
		nc.Close()
		lc.Shutdown()
	}
}

// currentOn tells whether node is the stream's leader or one of its current replicas.
func currentOn(c *jetstream.ClusterInfo, node string) bool {
	if c == nil {
		return false
	}
	if c.Leader == node {
		return true
	}
	for _, p := range c.Replicas {
		if p.Name == node && p.Current {
			return true
		}
	}
	return false
}

func rssMiB() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
