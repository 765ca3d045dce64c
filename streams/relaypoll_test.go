package streams_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/streams"
)

// TestRelayPollsWhenItTakesShards: a relay that tries for shards and gets none does not read
// every workspace's head at each try (the poll is the safety net of the shards it owns); once
// it takes the shards of a relay that stopped, it polls, and relays what was left behind.
func TestRelayPollsWhenItTakesShards(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.appendEvents(t, 1, persist.EventInput{})
	first, r1, stop1 := b.start(t, nil)
	first.waitFor(t, 1)
	require.Equal(t, 1.0, counterValue(t, r1, "natter_relay_polls_total"), "the first claim took every shard: one poll")
	second, r2, _ := b.start(t, func(c *streams.RelayConfig) { c.ClaimInterval = 10 * time.Millisecond })
	require.Never(t, func() bool { return counterValue(t, r2, "natter_relay_polls_total") > 0 }, 500*time.Millisecond,
		10*time.Millisecond, "a relay that took no shard polled")

	stop1()
	b.appendEvents(t, 1, persist.EventInput{}) // its wake-up may come before the second owns the shard
	second.waitFor(t, 2)
	require.Positive(t, counterValue(t, r2, "natter_relay_polls_total"))
}

// TestRelayPollBacksOffWhileWakeUpsWork: under a steady run of events whose wake-ups arrive,
// the poll (which reads every workspace's head) backs off as at rest, instead of running at
// its fastest after each wake-up; every event is relayed all the same.
func TestRelayPollBacksOffWhileWakeUpsWork(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch, r, _ := b.start(t, func(c *streams.RelayConfig) { c.PollInterval = 20 * time.Millisecond })
	tick := time.NewTicker(30 * time.Millisecond)
	defer tick.Stop()
	const events = 40
	for range events {
		<-tick.C
		b.appendEvents(t, 1, persist.EventInput{})
	}
	ch.waitFor(t, events)
	// Reset by each wake-up, the poll ran at least once between two events (40); backing off,
	// it runs every 160 ms at most once it has doubled three times.
	require.Less(t, counterValue(t, r, "natter_relay_polls_total"), 30.0)
}
