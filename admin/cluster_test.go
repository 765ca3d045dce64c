package admin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
	"github.com/natterchat/natter/streams/streamstest"
)

// localCluster starts a 3-node NATS JetStream cluster (real nats-server nodes with an
// auth_callout block, its requests encrypted or not) in this process, stopped when the test ends.
func localCluster(t *testing.T, encrypt bool) *streams.LocalCluster {
	t.Helper()
	lc, err := streams.StartLocalCluster(streams.LocalClusterConfig{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
		EncryptCallout: encrypt})
	require.NoError(t, err)
	t.Cleanup(lc.Shutdown)
	return lc
}

// clusterReplica runs `natter serve` against the cluster, answering its auth callout.
func clusterReplica(t *testing.T, lc *streams.LocalCluster, dbURL string) string {
	t.Helper()
	args := []string{"serve", "--database-url", dbURL, "--nats-url", lc.NatterURLs(), "--stream-replicas", "3",
		"--nats-callout-issuer-seed", lc.IssuerSeed, "--nats-system-url", lc.SystemURLs(),
		"--dev-bootstrap", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--access-log=false"}
	if lc.XKeySeed != "" {
		args = append(args, "--nats-callout-xkey-seed", lc.XKeySeed)
	}
	return startServer(t, args...)
}

// TestClusterBotsOverNATSCallout: with natter replicas on an external NATS cluster, a bot
// runtime connects to the cluster with its ccb_ token, is admitted through the auth callout,
// replays and follows its workspace live with the embedded mode's permissions (no other
// workspace, no JetStream API, no publishing but its replay), and is cut off when its token is
// revoked; anything that is not a live bot token is refused. The cluster's requests are sent in
// the clear, or encrypted to natter's xkey.
func TestClusterBotsOverNATSCallout(t *testing.T) {
	t.Parallel()
	for _, encrypt := range []bool{false, true} {
		t.Run(map[bool]string{false: "Plain", true: "Encrypted"}[encrypt], func(t *testing.T) {
			t.Parallel()
			testBotsOverNATSCallout(t, encrypt)
		})
	}
}

func testBotsOverNATSCallout(t *testing.T, encrypt bool) {
	lc := localCluster(t, encrypt)
	dbURL := persisttest.URL(t)
	a, b := clusterReplica(t, lc, dbURL), clusterReplica(t, lc, dbURL)

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
	postMessage(t, a, general, "before the bot connects")
	botUser, tok := persisttest.Bot(t, store, owner, ws0, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
	other := persisttest.Workspace(t, store, owner.ID)
	noRealtime := persisttest.BotToken(t, store, owner, ws0, botUser.ID, "messages:read")
	require.True(t, strings.HasPrefix(noRealtime.Token, "ccb_"))

	// Refused: no token, a token of another kind, an unknown bot token, a bot token without
	// realtime:read.
	for _, token := range []string{"", "natter_guess", "ccb_" + "unknownunknownunknown", noRealtime.Token} {
		opts := []nats.Option{nats.NoReconnect(), nats.Timeout(5 * time.Second)}
		if token != "" {
			opts = append(opts, nats.Token(token))
		}
		nc, err := nats.Connect(lc.ClientURLs(), opts...)
		if err == nil {
			nc.Close()
		}
		require.ErrorIs(t, err, nats.ErrAuthorization, "token %q", token)
	}

	errs := make(chan error, 16)
	closed := make(chan struct{})
	nc, err := nats.Connect(lc.ClientURLs(), nats.Token(tok.Token), nats.CustomInboxPrefix(streams.BotInboxPrefix(tok.ID)),
		nats.NoReconnect(), nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		}))
	require.NoError(t, err)
	t.Cleanup(nc.Close)

	// Replay by request: the backfill, and the live subjects it may follow.
	m, err := nc.Request(streams.BotReplaySubject(tok.ID), []byte(`{"include_tail":true}`), 10*time.Second)
	require.NoError(t, err)
	var page struct {
		Events []struct {
			Cursor  string          `json:"cursor"`
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		} `json:"events"`
		TailCursor *string  `json:"tail_cursor"`
		Subjects   []string `json:"subjects"`
	}
	require.NoError(t, json.Unmarshal(m.Data, &page), "%s", m.Data)
	require.NotEmpty(t, page.Events)
	require.NotNil(t, page.TailCursor)
	found := false
	for _, e := range page.Events {
		found = found || (e.Type == "message.created" && contains(e.Payload, "before the bot connects"))
	}
	require.True(t, found, "the replay holds the earlier message")

	live := make(chan *nats.Msg, 64)
	for _, s := range page.Subjects {
		_, err := nc.ChanSubscribe(s, live)
		require.NoError(t, err)
	}
	require.NoError(t, nc.Flush())
	postMessage(t, b, general, "posted on the other replica")
	deadline := time.After(20 * time.Second)
	for got := false; !got; {
		select {
		case m := <-live:
			got = contains(m.Data, "posted on the other replica")
		case <-deadline:
			t.Fatal("the bot did not receive the live message over the cluster")
		}
	}

	// Nothing beyond the embedded mode's permissions.
	_, err = nc.SubscribeSync("natter.events." + other.ID + ".ws.>")
	require.NoError(t, err)
	requireAsyncError(t, errs, "permissions violation")
	_, err = nc.SubscribeSync("$JS.API.>")
	require.NoError(t, err)
	requireAsyncError(t, errs, "permissions violation")
	require.NoError(t, nc.Publish("natter.events."+ws0+".ws.forged", []byte(`{}`)))
	requireAsyncError(t, errs, "permissions violation")
	require.NoError(t, nc.Publish(streams.BotReplaySubject("bot_someoneelse"), nil))
	requireAsyncError(t, errs, "permissions violation")

	// A replay whose reply lies outside the bot's inbox is answered nowhere: the replicas answer
	// on their own connections, which may publish where the bot may not.
	obs, err := nats.Connect(lc.NatterURLs())
	require.NoError(t, err)
	t.Cleanup(obs.Close)
	stolen := make(chan *nats.Msg, 16)
	for _, s := range []string{"natter.events." + other.ID + ".ws.forged", "$JS.API.STREAM.DELETE." + streams.StreamName(other.ID)} {
		_, err := obs.ChanSubscribe(s, stolen)
		require.NoError(t, err)
		require.NoError(t, obs.Flush())
		require.NoError(t, nc.PublishRequest(streams.BotReplaySubject(tok.ID), s, nil))
	}
	for range 8 { // each replica answers in order, and eight requests almost surely reach both
		_, err := nc.Request(streams.BotReplaySubject(tok.ID), nil, 10*time.Second)
		require.NoError(t, err)
	}
	require.NoError(t, obs.Flush())
	require.Empty(t, stolen, "natter published where the bot chose")

	// Revoked: the connection is cut off at once (the callout's replica kicks it through the
	// system account), and the token no longer connects.
	resp, err := http.Post(a+"/api/bot-tokens/"+tok.ID+"/revoke", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	select {
	case <-closed:
	case <-time.After(15 * time.Second):
		t.Fatal("the revoked bot was not cut off")
	}
	_, err = nats.Connect(lc.ClientURLs(), nats.Token(tok.Token), nats.NoReconnect())
	require.ErrorIs(t, err, nats.ErrAuthorization)
}

func requireAsyncError(t *testing.T, errs <-chan error, contains string) {
	t.Helper()
	select {
	case err := <-errs:
		require.ErrorContains(t, err, contains)
	case <-time.After(10 * time.Second):
		t.Fatalf("no asynchronous error %q", contains)
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }

// TestClusterSharedLimits: attempt budgets are spent across replicas, not per process: the
// password login budget of one identifier (10 an hour) and the setup-code claim budget of one
// address (10 a minute) run out after 10 attempts spread over two replicas.
func TestClusterSharedLimits(t *testing.T) {
	t.Parallel()
	emb, _ := streamstest.Embedded(t)
	dbURL := persisttest.URL(t)
	replica := func() string {
		return startServer(t, "serve", "--database-url", dbURL, "--nats-url", emb.TrustedURL(), "--password-auth",
			"--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--access-log=false")
	}
	replicas := []string{replica(), replica()}
	post := func(base, path, body string) int {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 10 {
		require.Equal(t, http.StatusUnauthorized, post(replicas[i%2], "/api/auth/password/login",
			`{"identifier":"nobody@example.com","password":"guess"}`), "login attempt %d", i+1)
	}
	for _, base := range replicas {
		require.Equal(t, http.StatusTooManyRequests, post(base, "/api/auth/password/login",
			`{"identifier":"nobody@example.com","password":"guess"}`), "the identifier's budget is spent on every replica")
	}
	require.Equal(t, http.StatusUnauthorized, post(replicas[0], "/api/auth/password/login",
		`{"identifier":"someone.else@example.com","password":"guess"}`), "another identifier has its own budget")

	for i := range 10 {
		require.Equal(t, http.StatusNotFound, post(replicas[i%2], "/api/bot-setup-codes/claim", `{"code":"NOPE-NOPE-NOPE"}`),
			"claim attempt %d", i+1)
	}
	for _, base := range replicas {
		require.Equal(t, http.StatusTooManyRequests, post(base, "/api/bot-setup-codes/claim", `{"code":"NOPE-NOPE-NOPE"}`),
			"the address's claim budget is spent on every replica")
	}
}

// TestClusterCommand: `natter cluster` starts NATS nodes, replicas and a private PostgreSQL,
// prints the replicas' URLs, and the replicas work as one: a message posted to one reaches a
// socket on the other. Ctrl-C (the context's end) stops everything and the command returns.
func TestClusterCommand(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- admin.Run(ctx, []string{"natter", "cluster", "--replicas", "2", "--base-port", "0",
			"--data-dir", persisttest.ReachableTempDir(t)}, pw, io.Discard)
		pw.Close()
	}()
	var urls []string
	var postgresPID int
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if m := regexp.MustCompile(`^  postgres .*\(pid (\d+), stopped with the cluster\)$`).FindStringSubmatch(sc.Text()); m != nil {
			postgresPID, _ = strconv.Atoi(m[1])
		}
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && strings.HasPrefix(fields[0], "natter-") {
			urls = append(urls, fields[1])
		}
		if strings.HasPrefix(strings.TrimSpace(sc.Text()), "try:") {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	require.Len(t, urls, 2, "the replicas' URLs are printed")

	var workspaces struct {
		Workspaces []struct{ ID string } `json:"workspaces"`
	}
	getJSON(t, urls[0]+"/api/workspaces", &workspaces)
	ws0 := workspaces.Workspaces[0].ID
	var channels struct {
		Channels []struct{ ID string } `json:"channels"`
	}
	getJSON(t, urls[1]+"/api/workspaces/"+ws0+"/channels", &channels)
	sock := dialWorkspace(t, urls[1], ws0)
	postMessage(t, urls[0], channels.Channels[0].ID, "across the local cluster")
	require.Contains(t, string(sock.nextOfType(t, "message.created").Payload), "across the local cluster")

	require.NotZero(t, postgresPID, "the cluster prints the PID of the postgres it started")

	cancel() // what SIGTERM does in main
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("natter cluster did not stop")
	}
	// Gone, or a zombie left for an init that does not reap (a container's).
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", postgresPID))
	if err == nil {
		_, state, _ := strings.Cut(string(stat), ") ")
		require.True(t, strings.HasPrefix(state, "Z"), "its postgres stopped with it: %s", stat)
	}
}
