package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/natterchat/natter/persist"
)

// On an external NATS cluster natter cannot check a bot's token inside the server, so the
// cluster asks: its auth_callout block sends every connection that is not one of natter's own to
// $SYS.REQ.USER.AUTH, and every natter replica answers as one queue group. A live ccb_ token
// gets a user JWT, signed with the callout's issuer key, that places the bot in natter's account
// with exactly the permissions of BotAccess on the embedded server (BotSubjects, its inbox, its
// replay subject; nothing else, so no JetStream API) and expires after TTL, when the bot
// reconnects and is checked again. Anything else is refused.
//
// Cutting a bot off at once (a revoked token, a lost membership, changed conversations) needs
// the cluster's system account, the only one that may disconnect a client: given a System
// connection, the replica that admitted a bot rechecks it like BotAccess does and kicks it from
// the server it is on. Without one a revoked bot keeps its connection until its JWT expires.

// AuthCalloutConfig configures the answering of a NATS cluster's authorization requests.
type AuthCalloutConfig struct {
	// Store resolves bot tokens. Required.
	Store *persist.Store
	// NATS is natter's own connection, a user of the callout's auth_users. Required.
	NATS *nats.Conn
	// Issuer signs answers and bot JWTs: the account key (seed SA…) whose public key is the
	// auth_callout block's issuer. Required.
	Issuer nkeys.KeyPair
	// Account is the account bots are placed in, the one natter's own connection publishes the
	// workspace streams in (the auth_callout block's account). Required.
	Account string
	// XKey is the curve key (seed SX…) whose public key is the block's xkey, when the cluster
	// encrypts its requests. Default nil: requests arrive in the clear.
	XKey nkeys.KeyPair
	// System is a connection as a user of the cluster's system account, used to disconnect bots
	// that must be cut off. Default nil: a bot keeps its connection until its JWT expires.
	System *nats.Conn
	// TTL is the lifetime of a bot's JWT: the longest a revoked bot stays connected without a
	// System connection. Default 2m.
	TTL time.Duration
	// RevalidateInterval is how often admitted bots are rechecked (with System). Default 15s.
	RevalidateInterval time.Duration
	// Timeout bounds each store lookup. Default 5s.
	Timeout time.Duration
	// Logger receives problems. Default slog.Default().
	Logger *slog.Logger
}

// AuthCallout answers the cluster's authorization requests for bot runtimes. It runs from Run.
type AuthCallout struct {
	cfg     AuthCalloutConfig
	issuer  string // public key of cfg.Issuer
	pending chan struct{}

	mu       sync.Mutex
	admitted map[admittedBot]admission
}

// admittedBot is a client connection of one server in the cluster.
type admittedBot struct {
	server string
	cid    uint64
}

type admission struct {
	tokenID string
	grants  string // what its permissions allow it to read (grantKey)
	expires time.Time
}

// AuthCalloutSubject is where a NATS server sends its authorization requests.
const AuthCalloutSubject = natsserver.AuthCalloutSubject

// serverInboxPrefix is where a NATS server awaits the answers to its own requests.
const serverInboxPrefix = natsserver.InboxPrefix

// NewAuthCallout validates cfg and applies defaults.
func NewAuthCallout(cfg AuthCalloutConfig) (*AuthCallout, error) {
	if cfg.Store == nil || cfg.NATS == nil || cfg.Issuer == nil || cfg.Account == "" {
		return nil, errors.New("streams: AuthCalloutConfig.Store, NATS, Issuer and Account are required")
	}
	issuer, err := cfg.Issuer.PublicKey()
	if err != nil || !nkeys.IsValidPublicAccountKey(issuer) {
		return nil, errors.New("streams: the auth callout issuer must be an account key (a seed starting SA)")
	}
	if cfg.XKey != nil {
		if pub, err := cfg.XKey.PublicKey(); err != nil || !nkeys.IsValidPublicCurveKey(pub) {
			return nil, errors.New("streams: the auth callout xkey must be a curve key (a seed starting SX)")
		}
	}
	if cfg.TTL == 0 {
		cfg.TTL = 2 * time.Minute
	}
	if cfg.TTL < time.Second {
		return nil, fmt.Errorf("streams: AuthCalloutConfig.TTL must be at least 1s, not %s", cfg.TTL)
	}
	if cfg.RevalidateInterval == 0 {
		cfg.RevalidateInterval = 15 * time.Second
	}
	if cfg.RevalidateInterval < 0 {
		return nil, fmt.Errorf("streams: AuthCalloutConfig.RevalidateInterval must be positive, not %s", cfg.RevalidateInterval)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &AuthCallout{cfg: cfg, issuer: issuer, pending: make(chan struct{}, 32),
		admitted: map[admittedBot]admission{}}, nil
}

// ParseSeed reads an nkey seed given in configuration; kind names it in the error.
func ParseSeed(seed, kind string) (nkeys.KeyPair, error) {
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(seed)))
	if err != nil {
		return nil, fmt.Errorf("%s is not an nkey seed (generate one with `nsc generate nkey`): %w", kind, err)
	}
	return kp, nil
}

// Run answers authorization requests until ctx ends, then waits for the answers under way.
func (a *AuthCallout) Run(ctx context.Context) error {
	var (
		wg      sync.WaitGroup
		stopMu  sync.Mutex
		stopped bool
	)
	sub, err := a.cfg.NATS.QueueSubscribe(AuthCalloutSubject, "natter", func(m *nats.Msg) {
		// Lookups run in parallel, a bounded number at a time; a full house waits here, on
		// the subscription's goroutine, so the server's own timeout refuses the excess.
		a.pending <- struct{}{}
		stopMu.Lock()
		if stopped {
			stopMu.Unlock()
			<-a.pending
			return
		}
		wg.Add(1)
		stopMu.Unlock()
		go func() {
			defer func() { <-a.pending; wg.Done() }()
			a.answer(ctx, m)
		}()
	})
	if err != nil {
		return fmt.Errorf("subscribe to authorization requests: %w", err)
	}
	defer func() {
		_ = sub.Unsubscribe()
		stopMu.Lock()
		stopped = true
		stopMu.Unlock()
		wg.Wait()
	}()
	if a.cfg.System == nil {
		<-ctx.Done()
		return nil
	}
	return sweepOnBotRevocations(ctx, a.cfg.NATS, a.cfg.RevalidateInterval, a.sweep)
}

// answer decides one request and replies with a signed answer; an undecodable request gets no
// reply (the server times out and refuses).
func (a *AuthCallout) answer(ctx context.Context, m *nats.Msg) {
	if !strings.HasPrefix(m.Reply, serverInboxPrefix) {
		// A server asks from its system inbox; an answer elsewhere would be a publish of
		// natter's for whoever sent the request.
		a.cfg.Logger.Warn("authorization request not from a server's inbox", "reply", m.Reply)
		return
	}
	data := m.Data
	serverXKey := m.Header.Get(natsserver.AuthRequestXKeyHeader)
	if serverXKey != "" {
		if a.cfg.XKey == nil {
			a.cfg.Logger.Warn("the nats cluster encrypts authorization requests but natter has no --nats-callout-xkey-seed")
			return
		}
		var err error
		if data, err = a.cfg.XKey.Open(data, serverXKey); err != nil {
			a.cfg.Logger.Warn("cannot decrypt an authorization request", "error", err)
			return
		}
	}
	req, err := jwt.DecodeAuthorizationRequestClaims(string(data))
	if err != nil || !nkeys.IsValidPublicServerKey(req.Issuer) {
		// Only a server signs these (decoding checked the signature against the issuer).
		a.cfg.Logger.Warn("undecodable authorization request", "error", err)
		return
	}
	res := jwt.NewAuthorizationResponseClaims(req.UserNkey)
	res.Audience = req.Server.ID
	if res.Jwt, err = a.admit(ctx, req); err != nil {
		res.Jwt, res.Error = "", err.Error()
	}
	out, err := res.Encode(a.cfg.Issuer)
	if err != nil {
		a.cfg.Logger.Error("cannot sign an authorization answer", "error", err)
		return
	}
	body := []byte(out)
	if serverXKey != "" {
		if body, err = a.cfg.XKey.Seal(body, serverXKey); err != nil {
			a.cfg.Logger.Error("cannot encrypt an authorization answer", "error", err)
			return
		}
	}
	if err := m.Respond(body); err != nil {
		a.cfg.Logger.Warn("cannot answer an authorization request", "error", err)
	}
}

// admit checks the connection's token and returns the bot's user JWT, or the refusal the server
// logs (the client sees only "Authorization Violation").
func (a *AuthCallout) admit(ctx context.Context, req *jwt.AuthorizationRequestClaims) (string, error) {
	token := req.ConnectOptions.Token
	if !strings.HasPrefix(token, persist.PrefixBotToken) {
		return "", errors.New("natter admits only bot tokens (" + persist.PrefixBotToken + "…) through this callout")
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	st, err := persist.WithTxV(ctx, a.cfg.Store, func(tx *persist.Tx) (persist.BotStream, error) {
		return tx.BotStreamOpen(ctx, token)
	})
	if err != nil {
		if e, ok := persist.ErrorOf(err); ok {
			return "", errors.New(e.Message)
		}
		a.cfg.Logger.Warn("bot nats authentication failed", "error", err)
		return "", errors.New("natter could not check the token")
	}
	expires := time.Now().Add(a.cfg.TTL)
	uc := jwt.NewUserClaims(req.UserNkey)
	uc.Name = botUserPrefix + st.TokenID
	uc.Audience = a.cfg.Account // the account the bot is placed in (server-config accounts)
	uc.Expires = expires.Unix()
	uc.Pub.Allow.Add(BotReplaySubject(st.TokenID))
	uc.Sub.Allow.Add(BotSubjects(st)...)
	uc.Sub.Allow.Add(BotInboxPrefix(st.TokenID) + ".>")
	signed, err := uc.Encode(a.cfg.Issuer)
	if err != nil {
		return "", fmt.Errorf("cannot sign the bot's credentials: %w", err)
	}
	if a.cfg.System != nil {
		a.mu.Lock()
		a.admitted[admittedBot{server: req.Server.ID, cid: req.ClientInformation.ID}] = admission{
			tokenID: st.TokenID, grants: grantKey(st), expires: expires}
		a.mu.Unlock()
	}
	return signed, nil
}

// sweep rechecks the bots this replica admitted whose JWT is still valid and kicks those that
// must go. A bot admitted by a replica that has since stopped is cut off at its JWT's expiry.
func (a *AuthCallout) sweep(ctx context.Context) {
	now := time.Now()
	byToken := map[string][]admittedBot{}
	grants := map[admittedBot]string{}
	a.mu.Lock()
	for c, ad := range a.admitted {
		if now.After(ad.expires) {
			delete(a.admitted, c)
			continue
		}
		byToken[ad.tokenID] = append(byToken[ad.tokenID], c)
		grants[c] = ad.grants
	}
	a.mu.Unlock()
	for _, c := range staleBotConns(ctx, a.cfg.Store, a.cfg.Timeout, a.cfg.Logger, byToken, func(c admittedBot) string { return grants[c] }) {
		if err := a.kick(c); err != nil {
			a.cfg.Logger.Warn("cannot cut off a bot connection", "server_id", c.server, "cid", c.cid, "error", err)
			continue
		}
		a.mu.Lock()
		delete(a.admitted, c)
		a.mu.Unlock()
	}
}

// kick asks the bot's server, through the system account, to disconnect it. A connection that
// has already gone counts as cut off.
func (a *AuthCallout) kick(c admittedBot) error {
	body, _ := json.Marshal(natsserver.KickClientReq{CID: c.cid})
	m, err := a.cfg.System.Request("$SYS.REQ.SERVER."+c.server+".KICK", body, a.cfg.Timeout)
	if err != nil {
		return err
	}
	var res natsserver.ServerAPIResponse
	if err := json.Unmarshal(m.Data, &res); err != nil {
		return err
	}
	if res.Error != nil && !strings.Contains(res.Error.Description, "no such client") {
		return errors.New(res.Error.Description)
	}
	return nil
}
