package server_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
)

// Issue 22, defect 1: a bot must never make natter publish where the bot itself may not, and
// nothing natter hears on NATS may start work that Postgres does not vouch for.

const advisoryRoot = "$JS.EVENT.ADVISORY.STREAM.CREATED."

// observe subscribes a connection of natter's own rights to subjects and returns what arrives.
func observe(t *testing.T, h *servertest.Harness, subjects ...string) (*nats.Conn, chan *nats.Msg) {
	t.Helper()
	nc, err := h.Embed.Connect("observer")
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

func TestBotNATSHostile(t *testing.T) {
	t.Parallel()

	t.Run("RepliesGoOnlyToTheBotsOwnInbox", func(t *testing.T) {
		t.Parallel()
		b := setupRealtime(t)
		// Another owner's workspace, with a stream the bot must not touch.
		other := b.h.NewUser(t)
		victim := persisttest.Workspace(t, b.h.Store, other.User.ID)
		victimCh := persisttest.Channel(t, b.h.Store, persist.ActorFor(other.User), victim.ID, "general").ID
		js, err := jetstream.New(b.h.NATS)
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

		_, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		_, otherTok := persisttest.Bot(t, b.h.Store, other.User, victim.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		targets := []string{
			"natter.events." + victim.ID + ".ch." + victimCh + ".message.created", // into another workspace's stream
			"natter.events." + b.ws.ID + ".ch." + b.general + ".message.created",  // into its own
			"natter.ephemeral." + victim.ID + ".ch." + victimCh + ".typing.started",
			advisoryRoot + "natter_events_forged",
			"natter.relay.wake." + victim.ID,
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
		obs, got := observe(t, b.h, targets...)
		nb, err := connectBot(t, b.h, tok, false)
		require.NoError(t, err)
		for _, reply := range targets {
			require.NoError(t, nb.nc.PublishRequest(streams.BotReplaySubject(tok.ID), reply, []byte(`{}`)))
		}
		// Requests are answered in order: once this one is, the others have been too.
		page := nb.replay(t, nil)
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

	t.Run("EverySubjectOutsideItsPermissionsIsRefused", func(t *testing.T) {
		t.Parallel()
		b := setupRealtime(t)
		other := b.h.NewUser(t)
		victim := persisttest.Workspace(t, b.h.Store, other.User.ID)
		_, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		_, otherTok := persisttest.Bot(t, b.h.Store, other.User, victim.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
		publish := []string{
			"natter.events." + b.ws.ID + ".ch." + b.general + ".message.created",
			"natter.events." + b.ws.ID + ".ws.workspace.updated",
			"natter.events." + victim.ID + ".ws.workspace.updated",
			"natter.ephemeral." + b.ws.ID + ".ch." + b.general + ".typing.started",
			"natter.ephemeral." + victim.ID + ".ws.presence.changed",
			"natter.relay.wake." + b.ws.ID,
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
			"natter.revoked",
			"_INBOX.>",
			streams.BotInboxPrefix(otherTok.ID) + ".>",
			"$JS.>",
			"$JS.EVENT.ADVISORY.>",
			"$SYS.>",
		}
		obs, got := observe(t, b.h, publish...)
		nb, err := connectBot(t, b.h, tok, false)
		require.NoError(t, err)
		for _, subject := range publish {
			require.NoError(t, nb.nc.Publish(subject, []byte(`{}`)))
			nb.expectError(t, fmt.Sprintf("Permissions Violation for Publish to %q", subject))
		}
		for _, subject := range subscribe {
			_, err := nb.nc.SubscribeSync(subject)
			require.NoError(t, err)
			nb.expectError(t, fmt.Sprintf("Permissions Violation for Subscription to %q", subject))
		}
		require.NoError(t, obs.Flush())
		select {
		case m := <-got:
			t.Fatalf("a refused publish arrived on %q", m.Subject)
		default:
		}
		require.Empty(t, nb.replay(t, nil).Code, "its own replay still works")
	})
}

// TestForgedEphemeralEvents: what is published on the ephemeral subjects (only natter may) is
// never taken as a fact: a forged event of a durable type is dropped, and a forged conversation
// member list does not show that conversation to someone outside it.
func TestForgedEphemeralEvents(t *testing.T) {
	t.Parallel()
	b := setupRealtime(t)
	tail := b.add(t, persist.EventInput{ChannelID: b.general})
	s := b.dial(t, b.member.Token, persist.FormatCursor(tail))
	hostile, err := b.h.Embed.Connect("hostile")
	require.NoError(t, err)
	t.Cleanup(hostile.Close)
	// The owner and the guest's conversation, claimed to include the member.
	m := nats.NewMsg("natter.ephemeral." + b.ws.ID + ".dm." + b.dm + ".typing.started")
	m.Header.Set(streams.HeaderDMMembers, b.owner.User.ID+","+b.guest.User.ID+","+b.member.User.ID)
	m.Data = []byte(`{"type":"typing.started","workspace_id":"` + b.ws.ID + `","direct_conversation_id":"` + b.dm + `","payload":{}}`)
	require.NoError(t, hostile.PublishMsg(m))
	require.NoError(t, hostile.Publish("natter.ephemeral."+b.ws.ID+".ch."+b.general+".message.created",
		[]byte(`{"type":"message.created","workspace_id":"`+b.ws.ID+`","channel_id":"`+b.general+`","payload":{"body":"forged"}}`)))
	require.NoError(t, hostile.Flush())
	b.add(t, persist.EventInput{DirectConversationID: b.dm})
	marker := b.add(t, persist.EventInput{ChannelID: b.general})
	e := s.Next(t)
	require.Equal(t, persist.FormatCursor(marker), e.Cursor, "the member got %s %s", e.Type, e.Payload)
}

// measure is the process's goroutines and live heap once the count has settled.
func measure(t *testing.T) (int, uint64) {
	t.Helper()
	last := -1
	for range 50 {
		runtime.GC()
		n := runtime.NumGoroutine()
		if n == last {
			break
		}
		last = n
		time.Sleep(100 * time.Millisecond)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return last, ms.HeapAlloc
}

// TestHostileNATSLeavesNothingRunning floods natter with what a hostile NATS peer could send: a
// bot's replay requests answered elsewhere, forged stream-created advisories, relay wake-ups and
// revocations for workspaces that do not exist. Afterwards natter runs what it ran before. Not
// parallel: it counts the process's goroutines.
func TestHostileNATSLeavesNothingRunning(t *testing.T) {
	b := setupRealtime(t, servertest.WithWebPush(nil))
	_, tok := persisttest.Bot(t, b.h.Store, b.owner.User, b.ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:read"}})
	nb, err := connectBot(t, b.h, tok, false)
	require.NoError(t, err)
	// A peer with natter's own rights: a misconfigured or compromised cluster user.
	hostile, err := b.h.Embed.Connect("hostile")
	require.NoError(t, err)
	t.Cleanup(hostile.Close)
	require.Empty(t, nb.replay(t, nil).Code)
	goroutines, heap := measure(t)

	const n = 1500
	for i := range n {
		forged := fmt.Sprintf("wsp_forged%05d", i)
		require.NoError(t, nb.nc.PublishRequest(streams.BotReplaySubject(tok.ID), advisoryRoot+streams.StreamName(forged+"b"), nil))
		require.NoError(t, hostile.Publish(advisoryRoot+streams.StreamName(forged), []byte(`{}`)))
		require.NoError(t, hostile.Publish("natter.relay.wake."+forged, nil))
		require.NoError(t, hostile.Publish("natter.revoked", []byte(`[{"workspace_id":"`+forged+`"}]`)))
		require.NoError(t, hostile.Publish("natter.ephemeral."+b.ws.ID+".dm.dm_"+forged+".typing.started", []byte(`{}`)))
		if i%100 == 0 {
			require.NoError(t, hostile.Flush()) // keep the pace the server accepts
		}
	}
	require.NoError(t, hostile.Flush())
	// Requests are answered in order: once this one is, the flood has been.
	_, err = nb.nc.Request(streams.BotReplaySubject(tok.ID), nil, time.Minute)
	require.NoError(t, err, "the bot is still answered")

	var after int
	var afterHeap uint64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if after, afterHeap = measure(t); after <= goroutines+10 && afterHeap <= heap+16<<20 {
			break
		}
	}
	t.Logf("goroutines %d → %d, live heap %.1f → %.1f MB", goroutines, after, float64(heap)/(1<<20), float64(afterHeap)/(1<<20))
	require.LessOrEqual(t, after, goroutines+10, "the flood left goroutines running")
	require.LessOrEqual(t, afterHeap, heap+16<<20, "the flood left memory held")
}
