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

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natterchat/natter/persist"
)

// Bot runtimes may read their workspace's events straight from the embedded NATS server
// (CONTRACT.md §Bots over NATS). A bot connects with its ccb_ token as the NATS token and gets
// exactly the permissions its WebSocket would have:
//
//   - subscribe to natter.events.<ws>.ws.> and .ch.> (a guest: only the guest channel), and to
//     .dm.<conversation>.> for each conversation it belongs to, and the same under
//     natter.ephemeral.<ws>; the relay's JetStream publishes reach these core subscriptions live;
//   - subscribe to its own inbox, _INBOX.<token_id>.>, for replies;
//   - publish only natter.bots.<token_id>.replay, a request answered with a page of backfill
//     after a cursor (the JetStream stream sequence is the cursor), read from Postgres with the
//     visibility rule, so a bot resumes exactly where it stopped.
//
// Nothing else: no JetStream API (a consumer's deliver subject could publish into any stream),
// no other subject. A replay is answered only on a reply subject in the bot's own inbox (one
// with a reply elsewhere is ignored): the answer goes out on natter's own connection, which may
// publish anywhere. Connected bots are rechecked every RevalidateInterval: a revoked token, a
// deleted bot, a lost membership (or a user bot's owner gone) or a lost realtime:read cuts the
// connection off, and so does a change in the bot's conversations, so that it reconnects with
// permissions that name the new set. Replay requests are checked each time.

// replayPendingMsgs and replayPendingBytes bound the replay requests waiting to be answered.
const (
	replayPendingMsgs  = 4096
	replayPendingBytes = 8 << 20
)

const (
	botRoot       = "natter.bots."
	botUserPrefix = "bot:"
	replaySuffix  = ".replay"
)

// BotInboxPrefix is the inbox prefix a bot runtime must use (nats.CustomInboxPrefix, or the nats
// CLI's --inbox-prefix): the only inbox it may subscribe to.
func BotInboxPrefix(tokenID string) string { return "_INBOX." + tokenID }

// BotReplaySubject is where the bot holding tokenID asks for backfill.
func BotReplaySubject(tokenID string) string { return botRoot + tokenID + replaySuffix }

// BotAccessConfig configures bot runtimes' access to the embedded NATS server.
type BotAccessConfig struct {
	// Store resolves tokens and reads backfill. Required.
	Store *persist.Store
	// Server is the embedded server bots connect to. Nil on an external cluster, where an
	// AuthCallout admits bots and BotAccess only answers their replay requests.
	Server *Embedded
	// NATS is natter's own connection, on which replay requests are answered. Required.
	NATS *nats.Conn
	// Logger receives problems. Default slog.Default().
	Logger *slog.Logger
	// RevalidateInterval is how often connected bots are rechecked. Default 15s.
	RevalidateInterval time.Duration
	// Timeout bounds each store lookup. Default 5s.
	Timeout time.Duration
}

// BotAccess admits bot runtimes to the embedded NATS server, answers their replay requests and
// cuts them off when their credentials or membership end. It runs from Run.
type BotAccess struct {
	cfg    BotAccessConfig
	runCtx context.Context // Run's context, for lookups the NATS server starts
	ready  chan struct{}

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
	grants   map[uint64]string // client id → the subjects its permissions allow, joined
}

// NewBotAccess validates cfg and applies defaults.
func NewBotAccess(cfg BotAccessConfig) (*BotAccess, error) {
	if cfg.Store == nil || cfg.NATS == nil {
		return nil, errors.New("streams: BotAccessConfig.Store and NATS are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RevalidateInterval == 0 {
		cfg.RevalidateInterval = 15 * time.Second
	}
	if cfg.RevalidateInterval < 0 {
		return nil, fmt.Errorf("streams: BotAccessConfig.RevalidateInterval must be positive, not %s", cfg.RevalidateInterval)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	return &BotAccess{cfg: cfg, grants: map[uint64]string{}, ready: make(chan struct{})}, nil
}

// Run admits bots, answers replay requests and rechecks connected bots until ctx ends; then bots
// are refused again and Run returns once no replay is being answered.
func (b *BotAccess) Run(ctx context.Context) error {
	b.runCtx = ctx
	sub, err := b.cfg.NATS.QueueSubscribe(botRoot+"*"+replaySuffix, "natter", b.onReplay)
	if err != nil {
		return fmt.Errorf("subscribe to bot replay requests: %w", err)
	}
	// A flood of requests waits in a bounded queue; beyond it requests are dropped (the bot's
	// request times out and it asks again) rather than held in natter's memory.
	if err := sub.SetPendingLimits(replayPendingMsgs, replayPendingBytes); err != nil {
		return fmt.Errorf("bound bot replay requests: %w", err)
	}
	if b.cfg.Server != nil {
		b.cfg.Server.bots.Store(b)
	}
	close(b.ready)
	defer func() {
		if b.cfg.Server != nil {
			b.cfg.Server.bots.CompareAndSwap(b, nil)
		}
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		_ = sub.Unsubscribe()
		b.inflight.Wait()
	}()
	if b.cfg.Server == nil {
		<-ctx.Done() // an AuthCallout admits and cuts off bots on an external cluster
		return nil
	}
	// A revoked token or a changed membership is checked at once, not at the next tick.
	return sweepOnBotRevocations(ctx, b.cfg.NATS, b.cfg.RevalidateInterval, b.sweep)
}

// Ready is closed once Run admits bots and answers their requests.
func (b *BotAccess) Ready() <-chan struct{} { return b.ready }

// authenticate is the server's check of a bot's token (see Embedded.Check): a live token with
// realtime:read whose bot is a member of the token's workspace.
func (b *BotAccess) authenticate(c natsserver.ClientAuthentication, token string) bool {
	ctx, cancel := context.WithTimeout(b.runCtx, b.cfg.Timeout)
	defer cancel()
	st, err := persist.WithTxV(ctx, b.cfg.Store, func(tx *persist.Tx) (persist.BotStream, error) {
		return tx.BotStreamOpen(ctx, token)
	})
	if err != nil {
		if !persist.IsRefusal(err) {
			b.cfg.Logger.Warn("bot nats authentication failed", "error", err)
		}
		return false
	}
	subjects := BotSubjects(st)
	c.RegisterUser(&natsserver.User{Username: botUserPrefix + st.TokenID, Permissions: &natsserver.Permissions{
		Publish:   &natsserver.SubjectPermission{Allow: []string{BotReplaySubject(st.TokenID)}},
		Subscribe: &natsserver.SubjectPermission{Allow: append(subjects, BotInboxPrefix(st.TokenID)+".>")},
	}})
	b.mu.Lock()
	b.grants[c.GetID()] = grantKey(st)
	b.mu.Unlock()
	return true
}

// grantKey is what a bot connection's permissions allow it to read, as one comparable string.
func grantKey(st persist.BotStream) string { return strings.Join(BotSubjects(st), " ") }

// BotSubjects are the live subjects a bot may subscribe to: what its viewer may read.
func BotSubjects(st persist.BotStream) []string {
	var out []string
	for _, root := range []string{eventsRoot, ephemeralRoot} {
		base := root + st.Viewer.WorkspaceID
		switch {
		case !st.Viewer.Guest:
			out = append(out, base+".ws.>", base+".ch.>")
		case st.GuestChannelID != "":
			out = append(out, base+".ch."+st.GuestChannelID+".>")
		}
		for _, ch := range st.PrivateChannels {
			out = append(out, base+".pch."+ch+".>")
		}
		for _, dm := range st.DMs {
			out = append(out, base+".dm."+dm+".>")
		}
	}
	return out
}

// sweep rechecks every connected bot and cuts off those whose token, bot, membership or scope
// ended, or whose readable subjects (conversations, guest standing) changed since they connected. A
// database outage cuts nobody off.
func (b *BotAccess) sweep(ctx context.Context) {
	byToken, err := b.botClients()
	if err != nil {
		b.cfg.Logger.Warn("cannot list bot connections", "error", err)
		return
	}
	b.mu.Lock()
	live := map[uint64]bool{}
	for _, ids := range byToken {
		for _, id := range ids {
			live[id] = true
		}
	}
	for id := range b.grants {
		if !live[id] {
			delete(b.grants, id)
		}
	}
	known := make(map[uint64]string, len(b.grants))
	for id, g := range b.grants {
		known[id] = g
	}
	b.mu.Unlock()
	for _, id := range staleBotConns(ctx, b.cfg.Store, b.cfg.Timeout, b.cfg.Logger, byToken, func(id uint64) string { return known[id] }) {
		if derr := b.cfg.Server.srv.DisconnectClientByID(id); derr != nil {
			b.cfg.Logger.Warn("cannot cut off a bot connection", "error", derr)
		}
	}
}

// staleBotConns rechecks the token of each group of bot connections and returns the connections
// to cut off: those whose token, bot, membership or scope ended, or whose readable subjects
// (grantsOf, their grantKey when they connected: conversations, guest standing, a user bot's
// owner's) changed since. A token that cannot be checked (the database is unreachable) keeps its
// connections.
func staleBotConns[C any](ctx context.Context, store *persist.Store, timeout time.Duration, logger *slog.Logger,
	byToken map[string][]C, grantsOf func(C) string) []C {
	var out []C
	for tokenID, conns := range byToken {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		st, err := persist.WithTxV(cctx, store, func(tx *persist.Tx) (persist.BotStream, error) {
			return tx.BotStreamCheck(cctx, tokenID)
		})
		cancel()
		if err != nil && !persist.IsRefusal(err) { // an outage cuts nobody off
			logger.Warn("bot recheck failed", "error", err)
			continue
		}
		// Any change of what it may read (a new conversation, the bot or its owner made a guest)
		// cuts the connection: it reconnects with the permissions of now.
		grants := grantKey(st)
		for _, c := range conns {
			if err != nil || grantsOf(c) != grants {
				out = append(out, c)
			}
		}
	}
	return out
}

// botClients lists the client ids of connected bots by token id.
func (b *BotAccess) botClients() (map[string][]uint64, error) {
	const page = 1024
	out := map[string][]uint64{}
	for offset := 0; ; offset += page {
		cz, err := b.cfg.Server.srv.Connz(&natsserver.ConnzOptions{Username: true, Offset: offset, Limit: page})
		if err != nil {
			return nil, err
		}
		for _, ci := range cz.Conns {
			if tokenID, ok := strings.CutPrefix(ci.AuthorizedUser, botUserPrefix); ok {
				out[tokenID] = append(out[tokenID], ci.Cid)
			}
		}
		if len(cz.Conns) < page {
			return out, nil
		}
	}
}

type replayRequest struct {
	AfterCursor string `json:"after_cursor"`
	Limit       int    `json:"limit"`
	IncludeTail bool   `json:"include_tail"`
}

type replayReply struct {
	Events     []json.RawMessage `json:"events"` // envelopes encoded as the stream carries them
	NextCursor string            `json:"next_cursor"`
	HasMore    bool              `json:"has_more"`
	TailCursor *string           `json:"tail_cursor,omitempty"`
	// Subjects are the live subjects the bot may subscribe to now.
	Subjects []string `json:"subjects"`
}

type replayError struct {
	Error string       `json:"error"`
	Code  persist.Code `json:"code"`
}

// onReplay answers natter.bots.<token_id>.replay with a backfill page, or {error, code}. The
// token in the subject is the sender's own: its permissions allow no other.
func (b *BotAccess) onReplay(m *nats.Msg) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.inflight.Add(1)
	b.mu.Unlock()
	defer b.inflight.Done()
	tokenID := strings.TrimSuffix(strings.TrimPrefix(m.Subject, botRoot), replaySuffix)
	if !inBotInbox(tokenID, m.Reply) {
		// The answer goes out on natter's own connection, which may publish anywhere: a reply
		// subject elsewhere would make a bot's request a publish of natter's (into another
		// workspace's stream, a JetStream API call, a forged advisory). Ignored, not answered.
		return
	}
	reply, err := b.replay(tokenID, m.Data)
	if err != nil {
		e, ok := persist.ErrorOf(err)
		if !ok {
			b.cfg.Logger.Error("bot replay failed", "error", err)
			e = persist.Errorf(persist.CodeInternal, "something went wrong on our side; it has been logged")
		}
		reply, _ = json.Marshal(replayError{Error: e.Message, Code: e.Code})
	}
	if err := b.cfg.NATS.Publish(m.Reply, reply); err != nil {
		b.cfg.Logger.Warn("cannot answer a bot replay", "error", err)
	}
}

// inBotInbox reports whether reply is a literal subject in the inbox of the bot holding tokenID,
// _INBOX.<token_id>.<one or more tokens>: the only subjects that bot may receive on, so natter
// publishes there nothing the bot could not have asked for itself.
func inBotInbox(tokenID, reply string) bool {
	rest, ok := strings.CutPrefix(reply, BotInboxPrefix(tokenID)+".")
	if tokenID == "" || !ok {
		return false
	}
	for _, tok := range strings.Split(rest, ".") {
		if tok == "" || tok == "*" || tok == ">" || strings.ContainsAny(tok, " \t\r\n") {
			return false
		}
	}
	return true
}

func (b *BotAccess) replay(tokenID string, data []byte) ([]byte, error) {
	req, after, err := parseReplayRequest(data)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(b.runCtx, b.cfg.Timeout)
	defer cancel()
	type result struct {
		st   persist.BotStream
		page persist.EventPage
	}
	res, err := persist.WithTxV(ctx, b.cfg.Store, func(tx *persist.Tx) (result, error) {
		st, page, err := tx.BotStreamReplay(ctx, tokenID, after, req.Limit, req.IncludeTail)
		return result{st, page}, err
	})
	if err != nil {
		return nil, err
	}
	out := replayReply{Events: make([]json.RawMessage, len(res.page.Events)), NextCursor: cursorText(res.page.Next),
		HasMore: res.page.HasMore, Subjects: BotSubjects(res.st)}
	for i, e := range res.page.Events {
		if _, out.Events[i], err = EncodeEvent(e); err != nil {
			return nil, err
		}
	}
	if req.IncludeTail {
		tail := cursorText(res.page.Tail)
		out.TailCursor = &tail
	}
	// A reply must fit in one NATS message: a page too large gives back its later half, which
	// the next request reads again.
	for {
		body, err := json.Marshal(out)
		if err != nil {
			return nil, err
		}
		if int64(len(body)) <= b.cfg.NATS.MaxPayload() || len(out.Events) <= 1 {
			return body, nil
		}
		out.Events = out.Events[:len(out.Events)/2]
		out.NextCursor, out.HasMore = cursorText(res.page.Events[len(out.Events)-1].Cursor), true
	}
}

// parseReplayRequest reads a bot's replay request: an optional JSON object {after_cursor, limit
// (at least 1, default 200; above 500 means 500), include_tail}. Codes: invalid_json,
// invalid_request, resync_required.
func parseReplayRequest(data []byte) (replayRequest, int64, error) {
	req := replayRequest{Limit: 200}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &req); err != nil {
			return req, 0, persist.Errorf(persist.CodeInvalidJSON, "the request must be a JSON object {after_cursor, limit, include_tail}")
		}
	}
	if req.Limit < 1 {
		return req, 0, persist.Invalid("limit must be a whole number from 1 to 500")
	}
	req.Limit = min(req.Limit, 500) // above the maximum is the maximum, as on every list
	after, err := persist.ParseCursor(req.AfterCursor)
	return req, after, err
}

func cursorText(c int64) string {
	if c == 0 {
		return ""
	}
	return persist.FormatCursor(c)
}
