package server_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
)

// Issue 22, defect 1: nothing natter hears on NATS may start work that Postgres does not vouch
// for. That a bot never makes natter publish where the bot itself may not is streams'
// (streams/botaccess_hostile_test.go).

const advisoryRoot = "$JS.EVENT.ADVISORY.STREAM.CREATED."

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
	require.Empty(t, nb.Replay(t, nil).Code)
	goroutines, heap := measure(t)

	const n = 1500
	for i := range n {
		forged := fmt.Sprintf("wsp_forged%05d", i)
		require.NoError(t, nb.NC.PublishRequest(streams.BotReplaySubject(tok.ID), advisoryRoot+streams.StreamName(forged+"b"), nil))
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
	_, err = nb.NC.Request(streams.BotReplaySubject(tok.ID), nil, time.Minute)
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
