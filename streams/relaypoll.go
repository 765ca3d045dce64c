package streams

import (
	"context"
	"sync"

	"github.com/natterchat/natter/persist"
)

// The relay's poll is the safety net under wake-ups: it lists the workspaces whose stream is
// behind their log. Its query joins every workspace's head with its relayed position, 20-150 ms
// at 20,000 workspaces on the shared 2-core VM, so it runs beside the relay's loop, never in
// its way (before, every event committed while it ran waited for it), and only on the poll's
// timer or when the relay took shards it did not hold (before, also at each claim attempt,
// every 2 s, which defeated the poll's back-off at rest).

// pendingLimit bounds the workspaces one poll reads.
const pendingLimit = 10000

// pollAnswer is what one poll read.
type pollAnswer struct {
	pending []persist.RelayState
	err     error
}

// pendingPoll runs at most one poll at a time for the relay's loop, which takes the answers.
type pendingPoll struct {
	answers chan pollAnswer
	running bool // read and written by the relay's loop only
	// announced holds the owned workspaces whose wake-up came since the last poll started (the
	// relay's loop only): behind, they are on their way, not a sign of wake-ups lost.
	announced map[string]bool
	wg        sync.WaitGroup
}

func newPendingPoll() *pendingPoll {
	return &pendingPoll{answers: make(chan pollAnswer, 1), announced: map[string]bool{}}
}

// start reads the pending workspaces in a goroutine of its own, unless a read is under way;
// the answer comes on answers.
func (p *pendingPoll) start(ctx context.Context, r *Relay) {
	if p.running {
		return
	}
	p.running = true
	clear(p.announced)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		r.metrics.polls.Inc()
		pending, err := persist.WithTxV(ctx, r.cfg.Store, func(tx *persist.Tx) ([]persist.RelayState, error) {
			return tx.RelayPending(ctx, pendingLimit)
		})
		p.answers <- pollAnswer{pending: pending, err: err}
	}()
}

// markPending takes a poll's answer: it marks the owned workspaces whose stream is behind their
// log, and reports whether any of them had no wake-up announced since the poll started (or the
// poll failed): wake-ups are being lost, and the poll should look again soon.
func (r *Relay) markPending(ctx context.Context, a pollAnswer, dirty, announced map[string]bool) bool {
	if a.err != nil {
		if ctx.Err() == nil {
			r.logger.Warn("relay poll failed", "error", a.err)
			if !persist.IsRefusal(a.err) {
				r.health.databaseLost()
			}
		}
		return true
	}
	r.health.databaseBack(r.logger)
	var backlog int64
	found := false
	behind := make(map[string]bool, len(a.pending))
	for _, s := range a.pending {
		if r.owned[r.shardOf(s.WorkspaceID)] {
			dirty[s.WorkspaceID], behind[s.WorkspaceID] = true, true
			found = found || !announced[s.WorkspaceID]
			backlog += s.Head - s.Relayed
		}
	}
	r.health.backlog.Set(float64(backlog))
	if len(a.pending) < pendingLimit {
		// A failed workspace that is no longer behind (deleted, or relayed by another
		// replica since) is not stalled.
		for id := range r.health.failing {
			if !behind[id] {
				delete(r.health.failing, id)
			}
		}
	}
	return found
}
