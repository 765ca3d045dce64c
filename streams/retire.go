package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natterchat/natter/persist"
)

// Idle streams are retired beside the relay's loop, never in its way: a retirement is a look at
// the stream and its consumers and a deletion, JetStream API calls that a busy cluster answers
// in seconds (natter bench --mode tenants --cluster saw its API stall for 10 s), and every event
// of every workspace waited for them while the loop made them. The loop keeps one thing: the say
// over each workspace. The sweep asks it before it records a retirement; the loop grants it only
// for a workspace it owns with nothing waiting to be relayed into or created for it, and holds
// that workspace's passes until the deletion has ended, so nothing is published into or created
// for a stream between its retirement's record and its deletion.

// errRetiring is a pass that found its workspace's stream being retired: it carries on once the
// deletion has ended.
var errRetiring = errors.New("streams: the workspace's stream is being retired")

// retirements is the sweep's side of the relay's loop.
type retirements struct {
	// held are the workspaces whose retirement the loop granted, true once a pass waits for it;
	// the relay's loop alone reads and writes the map.
	held map[string]bool
	ask  chan retireAsk
	done chan retireEnd
	// sweeping is a sweep under way: at most one runs, and a tick during it is skipped.
	sweeping atomic.Bool
	wg       sync.WaitGroup
}

// retireAsk is the sweep asking the loop for a workspace; the loop answers on reply.
type retireAsk struct {
	workspaceID string
	reply       chan bool
}

// retireEnd is the end of a granted retirement: recorded says the stream was recorded retired
// (and then deleted, or left for the next pass to find).
type retireEnd struct {
	workspaceID string
	recorded    bool
}

func newRetirements() retirements {
	return retirements{held: map[string]bool{}, ask: make(chan retireAsk), done: make(chan retireEnd, 1)}
}

// startSweep starts a retirement sweep of the workspaces of the shards the relay owns now,
// unless one is under way. Run by the relay's loop.
func (r *Relay) startSweep(ctx context.Context) {
	if !r.retirements.sweeping.CompareAndSwap(false, true) {
		return
	}
	owned := slices.Clone(r.owned)
	r.retirements.wg.Add(1)
	go func() {
		defer r.retirements.wg.Done()
		defer r.retirements.sweeping.Store(false)
		r.retireIdle(ctx, owned)
	}()
}

// retireIdle deletes the streams of this relay's workspaces (those of the owned shards) that
// have been idle for RetireAfter: a stream is a cache of the log, and the streams of dormant
// workspaces would otherwise cost memory, goroutines and start-up time in NATS for each of
// them. It looks at up to retireBatches batches, longest idle first, while they come full, one
// stream at a time.
func (r *Relay) retireIdle(ctx context.Context, owned []bool) {
	for range retireBatches {
		ids, err := r.cfg.Store.RelayIdle(ctx, r.cfg.RetireAfter, retireBatch)
		if err != nil {
			if ctx.Err() == nil {
				r.logger.Warn("relay cannot list idle streams", "error", err)
			}
			return
		}
		for _, id := range ids {
			if ctx.Err() != nil {
				return
			}
			if !owned[r.shardOf(id)] {
				continue
			}
			if err := r.retire(ctx, id); err != nil && ctx.Err() == nil {
				r.logger.Warn("relay cannot retire an idle stream", "workspace_id", id, "error", err)
			}
		}
		if len(ids) < retireBatch {
			return
		}
	}
}

// retire deletes one idle workspace's stream when nothing but followers that leave with it
// (WhileStreamExists, caught up) reads it, after recording it retired; a stream in use is
// looked at again after another idle period. The record refuses when the workspace moved since
// the look (its head or relayed position), and the loop's grant keeps its passes out from the
// record to the end of the deletion: whatever commits later is published into the stream
// created again after the last relayed cursor.
func (r *Relay) retire(ctx context.Context, workspaceID string) error {
	st, err := persist.ReadV(ctx, r.cfg.Store, func(tx *persist.Reader) (persist.RelayState, error) {
		return tx.RelayStateGet(ctx, workspaceID)
	})
	if err != nil {
		return err
	}
	name := StreamName(workspaceID)
	s, err := r.js.Stream(ctx, name)
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	if err == nil {
		if last := s.CachedInfo().State.LastSeq; last != uint64(st.Relayed) {
			return nil // the next pass verifies it
		}
		inUse, err := streamInUse(ctx, s)
		if err != nil {
			return err
		}
		if inUse {
			return r.cfg.Store.RelayStreamKept(ctx, workspaceID)
		}
	}
	if !r.granted(ctx, workspaceID) {
		return nil // busy: the next sweep looks again if it is still idle
	}
	end := retireEnd{workspaceID: workspaceID}
	defer func() {
		select {
		case r.retirements.done <- end:
		case <-ctx.Done():
		}
	}()
	ok, err := r.cfg.Store.RelayStreamRetired(ctx, workspaceID, st.Relayed)
	if err != nil || !ok {
		return err
	}
	end.recorded = true
	if f := r.beforeRetire.Load(); f != nil {
		(*f)(workspaceID)
	}
	if err := r.js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		// Recorded but kept: the next event's pass finds the stream and verifies it.
		return fmt.Errorf("relay: delete idle stream %s: %w", name, err)
	}
	r.metrics.retired.Inc()
	r.logger.Debug("idle stream retired", "workspace_id", workspaceID, "stream", name, "relayed", st.Relayed)
	return nil
}

// granted asks the relay's loop for the workspace: true when it may be retired now, and then
// its passes wait until retire reports the end on done.
func (r *Relay) granted(ctx context.Context, workspaceID string) bool {
	reply := make(chan bool, 1)
	select {
	case r.retirements.ask <- retireAsk{workspaceID: workspaceID, reply: reply}:
	case <-ctx.Done():
		return false
	}
	select {
	case ok := <-reply:
		return ok
	case <-ctx.Done():
		return false
	}
}

// grant answers a sweep's ask in the relay's loop: a workspace of a shard it still owns, not
// marked for a pass and with no stream being created for it, may be retired.
func (r *Relay) grant(a retireAsk, dirty map[string]bool) {
	id := a.workspaceID
	_, waking := r.wakings.pending[id]
	ok := r.owned[r.shardOf(id)] && !dirty[id] && !waking
	if ok {
		r.retirements.held[id] = false
	}
	a.reply <- ok
}

// retireEnded takes the end of a granted retirement in the relay's loop. Once recorded, what
// the relay knew of the stream is forgotten (deleted or not, the next pass looks again); a
// workspace whose pass waited is marked for one.
func (r *Relay) retireEnded(end retireEnd, dirty map[string]bool) {
	id := end.workspaceID
	waited := r.retirements.held[id]
	delete(r.retirements.held, id)
	if end.recorded {
		delete(r.streams, id)
		r.handoff.forget(id)
	}
	if waited {
		dirty[id] = true
	}
}

// retiring reports whether the workspace's retirement is under way, and notes that a pass
// waits for it. Run by the relay's loop.
func (r *Relay) retiring(workspaceID string) bool {
	if _, ok := r.retirements.held[workspaceID]; !ok {
		return false
	}
	r.retirements.held[workspaceID] = true
	return true
}

// streamInUse reports whether a consumer keeps the stream: any consumer but a caught-up one
// whose follower leaves with the stream (a socket's feed, an event subscription, a bot's own
// consumer, a catch-up read, or anything still pending).
func streamInUse(ctx context.Context, s jetstream.Stream) (bool, error) {
	list := s.ListConsumers(ctx)
	for info := range list.Info() {
		if info.Config.Metadata[metaWhileStreamExists] != "true" || info.NumPending > 0 || info.NumAckPending > 0 {
			return true, nil
		}
	}
	return false, list.Err()
}
