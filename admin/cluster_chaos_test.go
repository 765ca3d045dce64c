package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
)

// TestClusterChaos runs three `natter serve` processes on a 3-node NATS JetStream cluster
// (streams R3) under posts and sockets spread over them, SIGKILLs one replica, then stops the
// NATS node leading the workspace stream, then brings both back. Checked: every acknowledged
// post reaches every socket (whose replica died: it reconnects to another and resumes by
// cursor), the event subscription's endpoint and a bot reading over NATS, exactly once and in
// order.
func TestClusterChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos test runs for about a minute")
	}
	t.Parallel()
	lc := localCluster(t, true)
	dbURL := persisttest.URL(t)
	uploads := t.TempDir()
	replica := func() *replicaProcess {
		return startReplicaProcess(t, "serve", "--database-url", dbURL, "--nats-url", lc.NatterURLs(), "--stream-replicas", "3",
			"--nats-callout-issuer-seed", lc.IssuerSeed, "--nats-callout-xkey-seed", lc.XKeySeed,
			"--nats-system-url", lc.SystemURLs(), "--callback-allow-loopback",
			"--dev-bootstrap", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--upload-dir", uploads, "--access-log=false",
			"--stream-idle", "1s") // the dormant workspace's stream is retired between its posts
	}
	procs := []*replicaProcess{replica(), replica(), replica()}
	pool := &replicaPool{}
	pool.set(procs[0].url, procs[1].url, procs[2].url)
	a := procs[0].url

	ctx := t.Context()
	store, err := persist.Open(ctx, persist.Config{URL: dbURL, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	owner, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) { return tx.UserGet(ctx, getMe(t, a)) })
	require.NoError(t, err)
	var workspaces struct {
		Workspaces []struct{ ID string } `json:"workspaces"`
	}
	getJSON(t, a+"/api/workspaces", &workspaces)
	ws0 := workspaces.Workspaces[0].ID
	var channels struct {
		Channels []struct{ ID string } `json:"channels"`
	}
	getJSON(t, a+"/api/workspaces/"+ws0+"/channels", &channels)
	general := channels.Channels[0].ID
	postMessage(t, a, general, "warm-up: the relay creates the stream")

	// The subscription endpoint.
	// A replica killed between a callback and its record leaves the event to be delivered
	// again (at least once); receivers tell by X-Natter-Event-ID, and so does this one.
	hooked := newReceipt()
	var hookMu sync.Mutex
	hookIDs, repeats := map[string]bool{}, 0
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hookMu.Lock()
		id := r.Header.Get("X-Natter-Event-ID")
		seen := hookIDs[id]
		hookIDs[id] = true
		if seen {
			repeats++
		}
		hookMu.Unlock()
		if seen {
			return
		}
		var d struct {
			Event struct {
				Cursor  string          `json:"cursor"`
				Payload json.RawMessage `json:"payload"`
			} `json:"event"`
		}
		if json.NewDecoder(r.Body).Decode(&d) == nil {
			c, _ := persist.ParseCursor(d.Event.Cursor)
			hooked.add(c, d.Event.Payload)
		}
	}))
	t.Cleanup(receiver.Close)
	bot, tok := persisttest.Bot(t, store, owner, ws0, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
	var inst struct {
		Installation struct{ ID string } `json:"app_installation"`
	}
	postJSON(t, a+"/api/workspaces/"+ws0+"/app-installations", map[string]any{"app_slug": "chaos",
		"display_name": "Chaos", "bot_user_id": bot.ID, "config": map[string]any{}}, &inst)
	var sub struct {
		Subscription struct{ ID string } `json:"event_subscription"`
	}
	postJSON(t, a+"/api/workspaces/"+ws0+"/event-subscriptions", map[string]any{"app_installation_id": inst.Installation.ID,
		"event_types": []string{"message.created"}, "callback_url": receiver.URL + "/hook"}, &sub)

	// A second workspace that dozes off between posts, read by a bot over NATS only (which holds
	// no consumer): its stream is retired and created again throughout the chaos.
	var dormant struct {
		Workspace struct{ ID string } `json:"workspace"`
	}
	postJSON(t, a+"/api/workspaces", map[string]any{"name": "dormant"}, &dormant)
	ws1 := dormant.Workspace.ID
	var dormantCh struct {
		Channel struct{ ID string } `json:"channel"`
	}
	postJSON(t, a+"/api/workspaces/"+ws1+"/channels", map[string]any{"name": "general"}, &dormantCh)
	_, tok1 := persisttest.Bot(t, store, owner, ws1, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
	watch, err := nats.Connect(lc.NatterURLs(), nats.MaxReconnects(-1))
	require.NoError(t, err)
	defer watch.Close()
	var created atomic.Int64
	_, err = watch.Subscribe("$JS.EVENT.ADVISORY.STREAM.CREATED."+streams.StreamName(ws1), func(*nats.Msg) { created.Add(1) })
	require.NoError(t, err)

	runCtx, stopReaders := context.WithCancel(ctx)
	var readers sync.WaitGroup
	t.Cleanup(func() { stopReaders(); readers.Wait() })

	// Sockets, four per replica, each resuming by cursor on another replica when its own fails.
	sockets := make([]*receipt, 12)
	reconnects := make(chan time.Time, 1024)
	for i := range sockets {
		sockets[i] = newReceipt()
		readers.Add(1)
		go func() {
			defer readers.Done()
			followSocket(runCtx, pool, i, ws0, sockets[i], reconnects)
		}()
	}
	// A bot over NATS: live subjects, and a replay by cursor whenever its connection came back.
	botGot := newReceipt()
	readers.Add(1)
	go func() {
		defer readers.Done()
		followNATS(runCtx, t, lc.ClientURLs(), tok, botGot)
	}()
	dormantBot := newReceipt()
	readers.Add(1)
	go func() {
		defer readers.Done()
		followNATS(runCtx, t, lc.ClientURLs(), tok1, dormantBot)
	}()
	time.Sleep(time.Second) // sockets open and catch up

	// Posters: each posts in turn, one at a time, to the replicas in rotation.
	var ackMu sync.Mutex
	var acked []string
	postCtx, stopPosting := context.WithCancel(ctx)
	var posters sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for p := range 3 {
		posters.Add(1)
		go func() {
			defer posters.Done()
			for n := 0; postCtx.Err() == nil; n++ {
				token := fmt.Sprintf("chaos-p%d-%05d", p, n)
				raw, _ := json.Marshal(map[string]string{"body": token})
				resp, err := client.Post(pool.pick(p+n)+"/api/channels/"+general+"/messages", "application/json", bytes.NewReader(raw))
				if err != nil {
					continue // the replica died under the request: unacknowledged
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusCreated {
					ackMu.Lock()
					acked = append(acked, token)
					ackMu.Unlock()
				}
				time.Sleep(15 * time.Millisecond)
			}
		}()
	}

	// The dormant workspace's poster: a post every 2.5 s, each after its stream's retirement.
	var dormantAcked []string
	posters.Add(1)
	go func() {
		defer posters.Done()
		for n := 0; postCtx.Err() == nil; n++ {
			token := fmt.Sprintf("chaos-p9-%05d", n)
			raw, _ := json.Marshal(map[string]string{"body": token})
			resp, err := client.Post(pool.pick(n)+"/api/channels/"+dormantCh.Channel.ID+"/messages", "application/json", bytes.NewReader(raw))
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusCreated {
					ackMu.Lock()
					dormantAcked = append(dormantAcked, token)
					ackMu.Unlock()
				}
			}
			select {
			case <-postCtx.Done():
			case <-time.After(2500 * time.Millisecond):
			}
		}
	}()

	time.Sleep(3 * time.Second)
	killed := time.Now()
	procs[2].kill()
	pool.set(procs[0].url, procs[1].url)
	t.Logf("replica 3 killed")
	time.Sleep(3 * time.Second)

	nc, err := nats.Connect(lc.NatterURLs(), nats.MaxReconnects(-1))
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	leaderOf := func() string {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		s, err := js.Stream(sctx, streams.StreamName(ws0))
		if err != nil || s.CachedInfo().Cluster == nil {
			return ""
		}
		return s.CachedInfo().Cluster.Leader
	}
	leader := leaderOf()
	node := lc.NodeOf(leader)
	require.GreaterOrEqual(t, node, 0, "the stream has a leader among the nodes: %q", leader)
	stoppedNode := time.Now()
	lc.Stop(node)
	t.Logf("nats node %s (stream leader) stopped", leader)
	var newLeader string
	for newLeader == "" || newLeader == leader {
		time.Sleep(100 * time.Millisecond)
		newLeader = leaderOf()
		require.Less(t, time.Since(stoppedNode), 30*time.Second, "no new stream leader")
	}
	t.Logf("new stream leader %s after %s", newLeader, time.Since(stoppedNode).Round(10*time.Millisecond))
	time.Sleep(3 * time.Second)

	require.NoError(t, lc.Start(node))
	t.Logf("nats node %s back", leader)
	procs[2] = replica()
	pool.set(procs[0].url, procs[1].url, procs[2].url)
	t.Logf("replica 3 back at %s", procs[2].url)
	time.Sleep(3 * time.Second)
	stopPosting()
	posters.Wait()
	ackMu.Lock()
	all, dormantAll := append([]string(nil), acked...), append([]string(nil), dormantAcked...)
	ackMu.Unlock()
	require.NotEmpty(t, all)
	t.Logf("%d posts acknowledged", len(all))
	require.NotEmpty(t, dormantAll)
	// A socket that joins the dormant workspace now resumes from its start, older than its stream.
	late := newReceipt()
	lateCtx, stopLate := context.WithCancel(ctx)
	defer stopLate()
	readers.Add(1)
	go func() {
		defer readers.Done()
		followSocket(lateCtx, pool, 0, ws1, late, make(chan time.Time, 64))
	}()
	lateDeadline := time.Now().Add(30 * time.Second)
	for _, r := range []*receipt{dormantBot, late} {
		for r.missing(dormantAll) > 0 && time.Now().Before(lateDeadline) {
			time.Sleep(100 * time.Millisecond)
		}
	}
	stopLate()
	t.Logf("dormant workspace: %d posts acknowledged, its stream created %d times", len(dormantAll), created.Load())
	require.GreaterOrEqual(t, created.Load(), int64(2), "the dormant workspace's stream was never retired and created again")
	for name, r := range map[string]*receipt{"dormant workspace's bot": dormantBot, "late socket": late} {
		r.mu.Lock()
		require.Empty(t, r.problems, name)
		for i, tok := range dormantAll {
			require.Equal(t, 1, r.count[tok], "%s: %s delivered %d times", name, tok, r.count[tok])
			if i > 0 {
				require.Less(t, slices.Index(r.tokens, dormantAll[i-1]), slices.Index(r.tokens, tok), "%s: out of order", name)
			}
		}
		r.mu.Unlock()
	}

	// Everyone catches up; then each acknowledged post is there exactly once, each poster's in
	// the order they were acknowledged.
	readers2 := append([]*receipt{hooked, botGot}, sockets...)
	names := func(i int) string {
		switch i {
		case 0:
			return "subscription endpoint"
		case 1:
			return "bot over NATS"
		}
		return fmt.Sprintf("socket %d", i-2)
	}
	deadline := time.Now().Add(75 * time.Second)
	for i, r := range readers2 {
		for r.missing(all) > 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if i == 0 {
			t.Logf("subscription endpoint caught up %s after the replica was killed", time.Since(killed).Round(100*time.Millisecond))
		}
	}
	close(reconnects)
	n := 0
	var lastReconnect time.Time
	for at := range reconnects {
		n++
		lastReconnect = at
	}
	if n > 0 {
		t.Logf("%d socket reconnections, the last %s after the kill", n, lastReconnect.Sub(killed).Round(10*time.Millisecond))
	}
	for i, r := range readers2 {
		if m := r.missing(all); m > 0 {
			t.Logf("%s misses %d of %d posts", names(i), m, len(all))
		}
	}
	if t.Failed() || hooked.missing(all) > 0 {
		for i, p := range procs {
			t.Logf("replica %d: %d bytes of logs", i+1, p.logs.Len())
			for _, line := range strings.Split(p.logs.String(), "\n") {
				if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
					t.Logf("replica %d: %.300s", i+1, line)
				}
			}
		}
	}
	hookMu.Lock()
	t.Logf("subscription endpoint: %d repeated deliveries", repeats)
	require.LessOrEqual(t, repeats, 1, "only the event in flight at the SIGKILL is delivered again")
	hookMu.Unlock()
	for i, r := range readers2 {
		r.mu.Lock()
		require.Empty(t, r.problems, names(i))
		for _, tok := range all {
			require.Equal(t, 1, r.count[tok], "%s: %s delivered %d times", names(i), tok, r.count[tok])
		}
		seen := map[string]int{} // poster → last sequence number seen
		for _, tok := range r.tokens {
			var p, seq int
			_, _ = fmt.Sscanf(tok, "chaos-p%d-%05d", &p, &seq)
			if prev, ok := seen[fmt.Sprint(p)]; ok {
				require.Greater(t, seq, prev, "%s: poster %d's posts out of order", names(i), p)
			}
			seen[fmt.Sprint(p)] = seq
		}
		r.mu.Unlock()
	}
}

func postJSON(t *testing.T, url string, body, out any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(raw))
	require.NoError(t, err)
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", got)
	require.NoError(t, json.Unmarshal(got, out), "%s", got)
}
