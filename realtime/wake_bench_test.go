package realtime

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
)

// BenchmarkDormantWake times the first event of a dormant workspace (its stream retired) on
// its way to a fresh socket, step by step, as the tenants bench's wake samples do (a socket
// joins, 100 ms later a post commits): embedded NATS (R1) and an in-process 3-node cluster
// (R3). Each step is the time from the commit's start to when the benchmark saw it: the
// commit returned, the relay's wake-up on NATS, the stream's creation advisory, the event on
// its stream subject, the relay's record of its position, the frame at the socket (which, previewed, comes before
// the stream's creation); and "beside", the time from another (busy) workspace's commit, right
// after the waking one's, to its frame.
//
//	NATTER_BENCH_WAKES=50 go test ./realtime -run '^$' -bench DormantWake -benchtime 1x
func BenchmarkDormantWake(b *testing.B) {
	samples := 30
	if v, err := strconv.Atoi(os.Getenv("NATTER_BENCH_WAKES")); err == nil && v > 0 {
		samples = v
	}
	b.Run("Embedded", func(b *testing.B) {
		for range b.N {
			benchWake(b, nil, 1, samples)
		}
	})
	b.Run("ClusterR3", func(b *testing.B) {
		for range b.N {
			lc, err := streams.StartLocalCluster(streams.LocalClusterConfig{Dir: b.TempDir(), Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			nc, err := nats.Connect(lc.NatterURLs(), nats.MaxReconnects(-1))
			if err != nil {
				lc.Shutdown()
				b.Fatal(err)
			}
			benchWake(b, nc, 3, samples)
			nc.Close()
			lc.Shutdown()
		}
	})
}

func benchWake(b *testing.B, nc *nats.Conn, replicas, samples int) {
	var mu sync.Mutex
	relayed := map[int64]time.Time{} // the dormant workspace's recorded positions
	dormantID := ""
	relayEdit := func(c *streams.RelayConfig) {
		c.RetireAfter, c.Replicas = 300*time.Millisecond, replicas
		c.OnRelayed = func(id string, cursor int64) {
			mu.Lock()
			if id == dormantID {
				relayed[cursor] = time.Now()
			}
			mu.Unlock()
		}
	}
	hubEdit := func(c *Config) { c.FeedLinger = 100 * time.Millisecond }
	var e *env
	if nc == nil {
		e = newEnvWithRelay(b, 1, hubEdit, relayEdit)
	} else {
		e = newEnvOn(b, nc, 1, hubEdit, relayEdit)
	}
	mu.Lock()
	dormantID = e.ws.ID
	mu.Unlock()
	token := e.session(b, e.member)
	seen := func(subject string) *timeOf {
		t := &timeOf{}
		sub, err := e.nc.Subscribe(subject, func(*nats.Msg) { t.mark() })
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = sub.Unsubscribe() })
		return t
	}
	// A workspace in use beside the dormant one (its socket's feed keeps its stream): its event,
	// committed right after the waking one's, shows whether a wake holds up everyone else.
	busy := persisttest.Workspace(b, e.store, e.owner.ID)
	persisttest.Member(b, e.store, busy.ID, e.member.ID, persist.RoleMember)
	busyCh := persisttest.Channel(b, e.store, persist.ActorFor(e.owner), busy.ID, "general").ID
	busyToken := e.session(b, e.member)
	e.mu.Lock()
	j := e.joins[busyToken]
	j.WorkspaceID = busy.ID
	e.joins[busyToken] = j
	e.mu.Unlock()
	addBusy := func() int64 {
		ctx := context.Background()
		ev, err := persist.WithTxV(ctx, e.store, func(tx *persist.Tx) (persist.Event, error) {
			return tx.EventAppend(ctx, persist.EventInput{WorkspaceID: busy.ID, ChannelID: busyCh, ActorID: e.owner.ID,
				Type: "message.created", Payload: map[string]string{"body": "busy"}})
		})
		if err != nil {
			b.Fatal(err)
		}
		return ev.Cursor
	}
	busySocket := e.dial(b, busyToken, "")
	readUntil := func(cursor int64) {
		for want := strconv.FormatInt(cursor, 10); busySocket.Next(b).Cursor != want; {
		}
	}
	readUntil(addBusy())
	wake := seen("natter.relay.wake." + e.ws.ID)
	created := seen("$JS.EVENT.ADVISORY.STREAM.CREATED." + streams.StreamName(e.ws.ID))
	published := seen(streams.EventsSubjects(e.ws.ID))
	steps := []string{"commit", "wake", "created", "published", "recorded", "frame", "beside"}
	took := map[string][]time.Duration{}
	head := e.add(b, "first")
	b.ResetTimer()
	for range samples {
		streamRetired(b, e, head)
		s := e.dial(b, token, strconv.FormatInt(head, 10))
		time.Sleep(100 * time.Millisecond)
		for _, t := range []*timeOf{wake, created, published} {
			t.reset()
		}
		start := time.Now()
		head = e.add(b, "wake up")
		committed := time.Now()
		got := make(chan string, 1)
		var framed time.Time
		go func() {
			c := s.Next(b).Cursor
			framed = time.Now()
			got <- c
		}()
		busyStart := time.Now()
		busyCursor := addBusy()
		readUntil(busyCursor)
		took["beside"] = append(took["beside"], time.Since(busyStart))
		if c := <-got; c != strconv.FormatInt(head, 10) {
			b.Fatalf("the socket got cursor %s, not %d", c, head)
		}
		// The steps after the frame (a preview's stream creation and publish) are taken too.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			mu.Lock()
			_, ok := relayed[head]
			mu.Unlock()
			if ok {
				break
			}
		}
		mu.Lock()
		at := map[string]time.Time{"commit": committed, "wake": wake.get(), "created": created.get(),
			"published": published.get(), "recorded": relayed[head], "frame": framed}
		mu.Unlock()
		for _, step := range steps {
			if !at[step].IsZero() {
				took[step] = append(took[step], at[step].Sub(start))
			}
		}
		_ = s.Close()
	}
	b.StopTimer()
	for _, step := range steps {
		d := took[step]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		if len(d) == 0 {
			continue
		}
		q := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
		b.ReportMetric(float64(q(0.5).Microseconds())/1000, step+"_p50_ms")
		b.ReportMetric(float64(q(0.99).Microseconds())/1000, step+"_p99_ms")
		fmt.Fprintf(os.Stderr, "%s R%d %-10s n=%d p50 %s p90 %s max %s\n", b.Name(), replicas, step, len(d),
			q(0.5).Round(10*time.Microsecond), q(0.9).Round(10*time.Microsecond), d[len(d)-1].Round(10*time.Microsecond))
	}
}

// timeOf is when something was first seen since the last reset.
type timeOf struct {
	mu sync.Mutex
	at time.Time
}

func (t *timeOf) mark() {
	t.mu.Lock()
	if t.at.IsZero() {
		t.at = time.Now()
	}
	t.mu.Unlock()
}

func (t *timeOf) reset() { t.mu.Lock(); t.at = time.Time{}; t.mu.Unlock() }

func (t *timeOf) get() time.Time { t.mu.Lock(); defer t.mu.Unlock(); return t.at }
