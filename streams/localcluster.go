package streams

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"
)

// LocalClusterConfig configures a NATS JetStream cluster of real nats-server nodes (the module
// version in go.mod) running inside this process on loopback ports: an "external" cluster as
// natter replicas see it, for `natter cluster` and the cluster tests. Each node reads a config
// file written under Dir, in the shape of the top-level nats.conf: accounts NATTER (natter's
// user, JetStream, bots) and SYS, and an auth_callout block that sends bot connections to natter.
type LocalClusterConfig struct {
	// Dir holds each node's config file and JetStream store. Required.
	Dir string
	// Nodes is the cluster size. Default 3.
	Nodes int
	// Logger receives the nodes' warnings. Default slog.Default().
	Logger *slog.Logger
	// ReadyTimeout bounds a node's start and the cluster's JetStream meta leader election.
	// Default 30s.
	ReadyTimeout time.Duration
	// BasePort, when set, puts node i's client port at BasePort+i and its route port at
	// BasePort+Nodes+i (for machines where ports are shared out); 0 picks free ports.
	BasePort int
	// EncryptCallout gives the auth_callout block an xkey, so that the nodes encrypt their
	// requests (which carry bot tokens) to natter. Default false.
	EncryptCallout bool
}

// LocalCluster is a running LocalClusterConfig cluster.
type LocalCluster struct {
	cfg        LocalClusterConfig
	natterPass string
	systemPass string
	// IssuerSeed is the account seed whose public key the nodes' auth_callout names: what
	// natter replicas take as --nats-callout-issuer-seed. A secret of this cluster.
	IssuerSeed string
	// Account is the account natter's user is in and bots are placed in.
	Account string
	// XKeySeed is the curve seed matching the block's xkey (--nats-callout-xkey-seed) when
	// the cluster encrypts its requests; "" otherwise. A secret of this cluster.
	XKeySeed string

	mu    sync.Mutex
	nodes []*localNode
}

type localNode struct {
	name       string
	conf       string
	clientPort int
	srv        *natsserver.Server // nil while stopped
}

// StartLocalCluster writes the nodes' configs, starts them and waits for JetStream.
func StartLocalCluster(cfg LocalClusterConfig) (*LocalCluster, error) {
	if cfg.Dir == "" {
		return nil, errors.New("streams: LocalClusterConfig.Dir is required")
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	if cfg.Nodes < 1 || cfg.Nodes > 9 {
		return nil, fmt.Errorf("streams: LocalClusterConfig.Nodes must be 1 to 9, not %d", cfg.Nodes)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	issuer, err := nkeys.CreateAccount()
	if err != nil {
		return nil, err
	}
	seed, _ := issuer.Seed()
	issuerPub, _ := issuer.PublicKey()
	lc := &LocalCluster{cfg: cfg, natterPass: randomHex(), systemPass: randomHex(), IssuerSeed: string(seed), Account: "NATTER"}
	xkeyLine := ""
	if cfg.EncryptCallout {
		xk, err := nkeys.CreateCurveKeys()
		if err != nil {
			return nil, err
		}
		xseed, _ := xk.Seed()
		xpub, _ := xk.PublicKey()
		lc.XKeySeed, xkeyLine = string(xseed), "xkey: "+xpub
	}
	ports, err := freePorts(2 * cfg.Nodes)
	if cfg.BasePort > 0 {
		ports, err = make([]int, 2*cfg.Nodes), nil
		for i := range ports {
			ports[i] = cfg.BasePort + i
		}
	}
	if err != nil {
		return nil, err
	}
	// The nodes keep bcrypt hashes; natter presents the passwords. The passwords are random
	// 128-bit values, so the cheapest cost loses nothing, and every connection pays it.
	natterHash, err := bcrypt.GenerateFromPassword([]byte(lc.natterPass), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	systemHash, err := bcrypt.GenerateFromPassword([]byte(lc.systemPass), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	var routes []string
	for i := range cfg.Nodes {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[cfg.Nodes+i]))
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	for i := range cfg.Nodes {
		n := &localNode{name: fmt.Sprintf("nats-%d", i+1), clientPort: ports[i]}
		n.conf = filepath.Join(cfg.Dir, n.name+".conf")
		text := fmt.Sprintf(localNodeConf, n.name, n.clientPort, filepath.Join(cfg.Dir, n.name), ports[cfg.Nodes+i],
			strings.Join(routes, ", "), lc.Account, string(natterHash), string(systemHash), issuerPub, xkeyLine)
		if err := os.WriteFile(n.conf, []byte(text), 0o600); err != nil {
			return nil, err
		}
		lc.nodes = append(lc.nodes, n)
	}
	// Together, so that each finds its routes listening instead of logging refused dials.
	errs := make(chan error, len(lc.nodes))
	for i := range lc.nodes {
		go func() { errs <- lc.Start(i) }()
	}
	var startErr error
	for range lc.nodes {
		startErr = errors.Join(startErr, <-errs)
	}
	if startErr != nil {
		lc.Shutdown()
		return nil, startErr
	}
	if err := lc.WaitJetStream(); err != nil {
		lc.Shutdown()
		return nil, err
	}
	return lc, nil
}

// localNodeConf is one node's config (see the top-level nats.conf for the commented original).
const localNodeConf = `server_name: %s
listen: 127.0.0.1:%d
jetstream { store_dir: %q }
cluster {
  name: natter-local
  listen: 127.0.0.1:%d
  routes: [ %s ]
}
accounts {
  %[6]s { jetstream: enabled, users: [ { user: natter, password: %[7]q } ] }
  SYS { users: [ { user: natter_system, password: %[8]q } ] }
}
system_account: SYS
authorization {
  timeout: 5
  auth_callout {
    issuer: %[9]s
    account: %[6]s
    auth_users: [ natter, natter_system ]
    %[10]s
  }
}
`

// Start starts node i (again, after Stop) from its config file and store. Nodes may start
// concurrently; one node must not be started twice at once.
func (lc *LocalCluster) Start(i int) error {
	lc.mu.Lock()
	n := lc.nodes[i]
	running := n.srv != nil
	lc.mu.Unlock()
	if running {
		return nil
	}
	opts, err := natsserver.ProcessConfigFile(n.conf)
	if err != nil {
		return fmt.Errorf("%s: %w", n.name, err)
	}
	opts.NoSigs = true
	srv, err := natsserver.NewServer(opts)
	if err != nil {
		return fmt.Errorf("%s: %w", n.name, err)
	}
	srv.SetLoggerV2(&natsLogger{l: lc.cfg.Logger.With("component", "nats", "node", n.name)}, false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(lc.cfg.ReadyTimeout) {
		srv.Shutdown()
		return fmt.Errorf("%s did not become ready within %s", n.name, lc.cfg.ReadyTimeout)
	}
	lc.mu.Lock()
	n.srv = srv
	lc.mu.Unlock()
	return nil
}

// Stop shuts node i down abruptly, as a crash would (its store stays for Start).
func (lc *LocalCluster) Stop(i int) {
	lc.mu.Lock()
	srv := lc.nodes[i].srv
	lc.nodes[i].srv = nil
	lc.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// Shutdown stops every node, once each has stopped applying the meta layer's stream and
// consumer assignments. A node whose Shutdown runs while its meta layer applies them lets go of
// its system account first, so the assets' Raft groups it is creating fail to start after
// their logs' stores have been opened, and nothing ever stops those stores: they run, ticking
// and holding files open, for the rest of the process. So the followers first stop their
// JetStream alone (their meta layers finish the assignments at hand with the system account
// still there, and their assets stop with it); the leader, left without a quorum, commits
// nothing more, and is stopped once it has applied what it committed (at most settleTimeout).
func (lc *LocalCluster) Shutdown() {
	lc.mu.Lock()
	var followers []*natsserver.Server
	var leader *natsserver.Server
	for _, n := range lc.nodes {
		switch {
		case n.srv == nil:
		case leader == nil && n.srv.JetStreamIsLeader():
			leader = n.srv
		default:
			followers = append(followers, n.srv)
		}
	}
	lc.mu.Unlock()
	var wg sync.WaitGroup
	for _, srv := range followers {
		// A follower that became leader meanwhile waits 2 s for a successor first.
		wg.Go(func() { _ = srv.ShutdownJetStream() })
	}
	wg.Wait()
	if leader != nil {
		settle(leader, settleTimeout)
	}
	for i := range lc.nodes {
		lc.Stop(i)
	}
}

// settleTimeout bounds how long Shutdown waits for the meta leader to apply what it committed.
const settleTimeout = 5 * time.Second

// settle waits until srv has served the JetStream API requests it holds and applied every meta
// entry it committed, at the same index twice in a row, or until timeout. (A one-node cluster
// keeps its quorum: there settling waits for the requests queued when Shutdown began.)
func settle(srv *natsserver.Server, timeout time.Duration) {
	var last uint64
	quiet := 0
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		index, ok := metaApplied(srv)
		if !ok || index != last {
			last, quiet = index, 0
			continue
		}
		if quiet++; quiet == 2 {
			return
		}
	}
}

// metaApplied reports whether srv is idle (no JetStream API request queued or in flight, every
// committed meta entry applied), and its meta layer's commit index.
func metaApplied(srv *natsserver.Server) (uint64, bool) {
	js, err := srv.Jsz(&natsserver.JSzOptions{})
	if err != nil || js.API.Inflight > 0 || js.Meta == nil || js.Meta.Pending > 0 {
		return 0, false
	}
	rz := srv.Raftz(&natsserver.RaftzOptions{GroupFilter: metaGroup})
	if rz == nil {
		return 0, false
	}
	for _, groups := range *rz {
		if g, ok := groups[metaGroup]; ok && g.Applied == g.Committed && g.IPQApplyLen == 0 {
			return g.Committed, true
		}
	}
	return 0, false
}

// metaGroup is the name nats-server gives the JetStream meta layer's Raft group.
const metaGroup = "_meta_"

// WaitJetStream waits until the running nodes agree on a JetStream meta leader.
func (lc *LocalCluster) WaitJetStream() error {
	deadline := time.Now().Add(lc.cfg.ReadyTimeout)
	for time.Now().Before(deadline) {
		lc.mu.Lock()
		ready := true
		for _, n := range lc.nodes {
			if n.srv != nil && (!n.srv.JetStreamEnabled() || !n.srv.JetStreamIsCurrent()) {
				ready = false
			}
		}
		lc.mu.Unlock()
		if ready {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the nats cluster elected no JetStream leader within %s", lc.cfg.ReadyTimeout)
}

// NodeOf returns the index of the node whose server name is name, or -1.
func (lc *LocalCluster) NodeOf(name string) int {
	for i, n := range lc.nodes {
		if n.name == name {
			return i
		}
	}
	return -1
}

// ClientURLs lists every node's client URL without credentials, comma-separated: what bot
// runtimes connect to.
func (lc *LocalCluster) ClientURLs() string { return lc.urls("") }

// NatterURLs is ClientURLs with natter's own credentials: --nats-url. A secret.
func (lc *LocalCluster) NatterURLs() string { return lc.urls("natter:" + lc.natterPass + "@") }

// SystemURLs is ClientURLs with the system account user's credentials: --nats-system-url.
func (lc *LocalCluster) SystemURLs() string { return lc.urls("natter_system:" + lc.systemPass + "@") }

func (lc *LocalCluster) urls(userinfo string) string {
	out := make([]string, len(lc.nodes))
	for i, n := range lc.nodes {
		out[i] = fmt.Sprintf("nats://%s127.0.0.1:%d", userinfo, n.clientPort)
	}
	return strings.Join(out, ",")
}

// freePorts finds n loopback ports free now; the nodes bind them moments later and keep them
// across restarts.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	out := make([]int, n)
	for i := range out {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out[i] = l.Addr().(*net.TCPAddr).Port
	}
	return out, nil
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
