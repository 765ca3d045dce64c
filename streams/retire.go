package streams

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natterchat/natter/persist"
)

// retireIdle deletes the streams of this relay's workspaces that have been idle for
// RetireAfter: a stream is a cache of the log, and the streams of dormant workspaces would
// otherwise cost memory, goroutines and start-up time in NATS for each of them. A workspace
// woken meanwhile (dirty) is left to its pass. A sweep takes up to retireBatches batches while
// they come full; past the first retireAtLeast streams it stops as soon as wakeful reports events
// waiting to be relayed, so relaying is not held behind a backlog of retirements, and a steady
// stream of wake-ups does not starve retirement either.
func (r *Relay) retireIdle(ctx context.Context, dirty map[string]bool, wakeful func() bool) {
	done := 0
	for range retireBatches {
		ids, err := r.cfg.Store.RelayIdle(ctx, r.cfg.RetireAfter, retireBatch)
		if err != nil {
			if ctx.Err() == nil {
				r.logger.Warn("relay cannot list idle streams", "error", err)
			}
			return
		}
		for _, id := range ids {
			if ctx.Err() != nil || (done >= retireAtLeast && wakeful()) {
				return
			}
			done++
			if _, waking := r.wakings.pending[id]; !r.owned[r.shardOf(id)] || dirty[id] || waking {
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
// looked at again after another idle period. Run by the relay's goroutine, so no publish into
// the stream runs meanwhile, and the record refuses when the workspace's head moved: whatever
// commits later is published into the stream created again after the last relayed cursor.
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
	ok, err := r.cfg.Store.RelayStreamRetired(ctx, workspaceID, st.Relayed)
	if err != nil || !ok {
		return err
	}
	delete(r.streams, workspaceID)
	r.handoff.forget(workspaceID)
	if err := r.js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("relay: delete idle stream %s: %w", name, err)
	}
	r.metrics.retired.Inc()
	r.logger.Debug("idle stream retired", "workspace_id", workspaceID, "stream", name, "relayed", st.Relayed)
	return nil
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
