package streams

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/natterchat/natter/persist"
)

// revokedSubject carries revocations between replicas: every replica rechecks its own sockets
// and bot connections that use what ended. Only natter itself may publish here.
const revokedSubject = "natter.revoked"

// AnnounceRevocations returns the store's OnRevoked hook: one core NATS message per commit.
// Publishing only buffers, so it never blocks a request; a lost message costs only the delay
// until the next periodic recheck.
func AnnounceRevocations(nc *nats.Conn) func([]persist.Revocation) {
	return func(rs []persist.Revocation) {
		body, err := json.Marshal(rs)
		if err == nil {
			_ = nc.Publish(revokedSubject, body)
		}
	}
}

// SubscribeRevocations calls fn with every announced revocation, on the subscription's goroutine.
func SubscribeRevocations(nc *nats.Conn, fn func(persist.Revocation)) (*nats.Subscription, error) {
	sub, err := nc.Subscribe(revokedSubject, func(m *nats.Msg) {
		var rs []persist.Revocation
		if json.Unmarshal(m.Data, &rs) != nil {
			return
		}
		for _, r := range rs {
			fn(r)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe to revocations: %w", err)
	}
	return sub, nil
}

// StoreConfig wires a store to NATS, the one place that says how an event leaves: after a commit
// that appended events the store wakes the relay of those workspaces (WakeRelay), which copies
// them into the workspace streams everything else follows; after a commit that ended credentials
// or memberships it announces them (AnnounceRevocations). Every process that serves requests
// builds its store with it.
func StoreConfig(nc *nats.Conn, cfg persist.Config) persist.Config {
	cfg.OnEventsCommitted = WakeRelay(nc)
	cfg.OnRevoked = AnnounceRevocations(nc)
	return cfg
}

// sweepOnBotRevocations calls sweep every interval and at once after an announcement that may
// concern a bot (any but a session's), until ctx ends: both ways bots reach NATS re-check their
// connections this way.
func sweepOnBotRevocations(ctx context.Context, nc *nats.Conn, interval time.Duration, sweep func(context.Context)) error {
	kick := make(chan struct{}, 1)
	revocations, err := SubscribeRevocations(nc, func(r persist.Revocation) {
		if r.SessionID != "" {
			return // bots have no sessions
		}
		select {
		case kick <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return err
	}
	defer func() { _ = revocations.Unsubscribe() }()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			sweep(ctx)
		case <-kick:
			sweep(ctx)
		}
	}
}
