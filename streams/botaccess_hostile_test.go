package streams_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
)

// Issue 22, defect 1: a bot must never make natter publish where the bot itself may not.

const advisoryRoot = "$JS.EVENT.ADVISORY.STREAM.CREATED."

// observe subscribes a connection of natter's own rights to subjects and returns what arrives.
func observe(t *testing.T, emb *streams.Embedded, subjects ...string) (*nats.Conn, chan *nats.Msg) {
	t.Helper()
	nc, err := emb.Connect("observer")
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	got := make(chan *nats.Msg, 1024)
	for _, s := range subjects {
		_, err := nc.ChanSubscribe(s, got)
		require.NoError(t, err)
	}
	require.NoError(t, nc.Flush())
	return nc, got
}

func TestBotAccessHostile(t *testing.T) {
	t.Parallel()

	t.Run("RepliesGoOnlyToTheBotsOwnInbox", func(t *testing.T) {
		t.Parallel()
		b := setupBots(t, nil)
		// Another owner's workspace, with a stream the bot must not touch.
		other := persisttest.User(t, b.store, nil)
		victim := persisttest.Workspace(t, b.store, other.ID)
		victimCh := persisttest.Channel(t, b.store, persist.ActorFor(other), victim.ID, "general").ID
		js, err := jetstream.New(b.nc)
		require.NoError(t, err)
		var before uint64
		require.Eventually(t, func() bool {
			s, err := js.Stream(context.Background(), streams.StreamName(victim.ID))
			if err != nil {
				return false
			}
			before = s.CachedInfo().State.LastSeq
			return before > 0
		}, 10*time.Second, 20*time.Millisecond, "the victim's stream is relayed")

		_, tok := persisttest.Bot(t, b.store, b.owner, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		_, otherTok := persisttest.Bot(t, b.store, other, victim.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		targets := []string{
			"natter.events." + victim.ID + ".ch." + victimCh + ".message.created", // into another workspace's stream
			"natter.events." + b.ws.ID + ".ch." + b.general + ".message.created",  // into its own
			"natter.ephemeral." + victim.ID + ".ch." + victimCh + ".typing.started",
			advisoryRoot + "natter_events_forged",
			"natter.relay.wake." + victim.ID,
			streams.PreviewSubject(victim.ID),
			"natter.revoked",
			"$JS.API.STREAM.DELETE." + streams.StreamName(victim.ID),
			"$JS.API.STREAM.PURGE." + streams.StreamName(victim.ID),
			streams.BotReplaySubject(otherTok.ID),
			streams.BotInboxPrefix(otherTok.ID) + ".x",
			streams.BotInboxPrefix(tok.ID),                        // its inbox prefix is not an inbox
			streams.BotInboxPrefix(tok.ID) + "x.y",                // nor is a longer token
			"_INBOX." + strings.TrimPrefix(tok.ID, "btk_") + ".x", // nor a look-alike
			"$SYS.REQ.SERVER.PING",
		}
		obs, got := observe(t, b.emb, targets...)
		nb, err := b.connectBot(t, tok, false)
		require.NoError(t, err)
		for _, reply := range targets {
			require.NoError(t, nb.NC.PublishRequest(streams.BotReplaySubject(tok.ID), reply, []byte(`{}`)))
		}
		// Requests are answered in order: once this one is, the others have been too.
		page := nb.Replay(t, nil)
		require.Empty(t, page.Code)
		require.NoError(t, obs.Flush())
		select {
		case m := <-got:
			t.Fatalf("natter published on %q for a bot: %s", m.Subject, m.Data)
		default:
		}
		s, err := js.Stream(context.Background(), streams.StreamName(victim.ID))
		require.NoError(t, err, "the victim's stream is still there")
		require.Equal(t, before, s.CachedInfo().State.LastSeq)
	})

	// A reply subject with a wildcard token names no inbox: published to, it would reach every
	// subscriber of a pattern over the bot's inbox, natter's own connections included.
	t.Run("NoReplyToAWildcardInItsOwnInbox", func(t *testing.T) {
		t.Parallel()
		b := setupBots(t, nil)
		_, tok := persisttest.Bot(t, b.store, b.owner, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		// nats.go's replies go to <prefix>.<mux id>.<n>, two tokens: this pattern sees only the
		// one-token subjects below.
		obs, got := observe(t, b.emb, streams.BotInboxPrefix(tok.ID)+".*")
		nb, err := b.connectBot(t, tok, false)
		require.NoError(t, err)
		for _, reply := range []string{streams.BotInboxPrefix(tok.ID) + ".*", streams.BotInboxPrefix(tok.ID) + ".>"} {
			require.NoError(t, nb.NC.PublishRequest(streams.BotReplaySubject(tok.ID), reply, []byte(`{}`)))
		}
		page := nb.Replay(t, nil)
		require.Empty(t, page.Code)
		require.NoError(t, obs.Flush())
		select {
		case m := <-got:
			t.Fatalf("natter answered a bot on the wildcard subject %q", m.Subject)
		default:
		}
	})

	t.Run("EverySubjectOutsideItsPermissionsIsRefused", func(t *testing.T) {
		t.Parallel()
		b := setupBots(t, nil)
		other := persisttest.User(t, b.store, nil)
		victim := persisttest.Workspace(t, b.store, other.ID)
		_, tok := persisttest.Bot(t, b.store, b.owner, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		_, otherTok := persisttest.Bot(t, b.store, other, victim.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		publish := []string{
			"natter.events." + b.ws.ID + ".ch." + b.general + ".message.created",
			"natter.events." + b.ws.ID + ".ws.workspace.updated",
			"natter.events." + victim.ID + ".ws.workspace.updated",
			"natter.ephemeral." + b.ws.ID + ".ch." + b.general + ".typing.started",
			"natter.ephemeral." + victim.ID + ".ws.presence.changed",
			"natter.relay.wake." + b.ws.ID,
			streams.PreviewSubject(b.ws.ID),
			"natter.revoked",
			streams.BotReplaySubject(otherTok.ID),
			"natter.bots." + tok.ID + ".other",
			streams.BotInboxPrefix(tok.ID) + ".x",
			streams.BotInboxPrefix(otherTok.ID) + ".x",
			advisoryRoot + streams.StreamName("wsp_forged"),
			"$JS.API.INFO",
			"$JS.API.STREAM.CREATE.x",
			"$JS.API.STREAM.DELETE." + streams.StreamName(b.ws.ID),
			"$JS.API.CONSUMER.CREATE." + streams.StreamName(b.ws.ID),
			"$JS.ACK.x",
			"$SYS.REQ.USER.AUTH",
			"$SYS.REQ.SERVER.PING",
			"$KV.x.y",
			"anything",
		}
		subscribe := []string{
			">",
			"natter.>",
			"natter.events.>",
			"natter.events." + b.ws.ID + ".>",
			"natter.events." + b.ws.ID + ".dm." + b.dm + ".>", // a conversation it is not in
			"natter.events." + victim.ID + ".ws.>",
			"natter.ephemeral." + victim.ID + ".ch.>",
			"natter.bots.>",
			streams.BotReplaySubject(otherTok.ID),
			"natter.relay.wake.>",
			streams.PreviewSubject(b.ws.ID),
			"natter.relay.>",
			"natter.revoked",
			"_INBOX.>",
			streams.BotInboxPrefix(otherTok.ID) + ".>",
			"$JS.>",
			"$JS.EVENT.ADVISORY.>",
			"$SYS.>",
		}
		obs, got := observe(t, b.emb, publish...)
		nb, err := b.connectBot(t, tok, false)
		require.NoError(t, err)
		for _, subject := range publish {
			require.NoError(t, nb.NC.Publish(subject, []byte(`{}`)))
			nb.ExpectError(t, fmt.Sprintf("Permissions Violation for Publish to %q", subject))
		}
		for _, subject := range subscribe {
			_, err := nb.NC.SubscribeSync(subject)
			require.NoError(t, err)
			nb.ExpectError(t, fmt.Sprintf("Permissions Violation for Subscription to %q", subject))
		}
		require.NoError(t, obs.Flush())
		select {
		case m := <-got:
			t.Fatalf("a refused publish arrived on %q", m.Subject)
		default:
		}
		require.Empty(t, nb.Replay(t, nil).Code, "its own replay still works")
	})
}
