package streams

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/natterchat/natter/persist"
)

// A retired stream is created again at its workspace's next event. On a cluster that is an R3
// stream, a Raft group elected across three nodes: 80-300 ms on the shared VM, and up to the
// publish's 5-s timeout when the new group's first acknowledgement is lost. The relay's loop
// does not wait for it: the workspace's first events go to its sockets as previews, the
// creation runs in a goroutine of its own, and the loop relays every other workspace
// meanwhile; when the stream exists the workspace is passed over again and its events go in.
// BenchmarkDormantWake's "beside" step (another workspace's event committed right after the
// waking one's) measured the wait this removes: on R3 115 ms at the median and 5.1 s at worst
// before, 11 ms and 72 ms after.

// errWaking is a pass that found its workspace's stream being created: it carries on once the
// stream exists.
var errWaking = errors.New("streams: the workspace's stream is being created")

// wakings are the streams being created again, by workspace; the relay's loop alone reads and
// writes the map, and hears of each creation's end on done.
type wakings struct {
	pending map[string]*waking
	done    chan wokenStream
	// slot lets one creation run at a time, as when the loop made them itself: twenty at once
	// (an active load's workspaces waking together, natter bench --mode tenants --cluster) held
	// the 3-node cluster's JetStream API past its 10-s timeouts on the shared VM.
	slot chan struct{}
	wg   sync.WaitGroup
}

// waking is a stream being created, with the events previewed meanwhile (nil: none).
type waking struct{ early *batch }

// wokenStream is the end of a creation: the position to continue from and the stream's first
// cursor to record (wakeStream's results), or why it failed.
type wokenStream struct {
	workspaceID   string
	last, created uint64
	err           error
}

// woken is a created stream whose workspace's next pass publishes the previewed events.
type woken struct {
	created uint64
	early   *batch
}

func newWakings() wakings {
	return wakings{pending: map[string]*waking{}, done: make(chan wokenStream, 64), slot: make(chan struct{}, 1)}
}

// wake previews a retired workspace's first events and starts creating its stream; the pass
// ends with errWaking, and the loop passes over the workspace again when the stream exists
// (wokenStream). A workspace whose stream is already being created waits for it.
func (r *Relay) wake(ctx context.Context, st persist.RelayState) error {
	if _, ok := r.wakings.pending[st.WorkspaceID]; ok {
		return errWaking
	}
	w := &waking{early: r.preview(ctx, st)}
	r.wakings.pending[st.WorkspaceID] = w
	r.wakings.wg.Add(1)
	go func() {
		defer r.wakings.wg.Done()
		select {
		case r.wakings.slot <- struct{}{}:
			defer func() { <-r.wakings.slot }()
		case <-ctx.Done():
			return
		}
		if f := r.beforeWake.Load(); f != nil {
			(*f)(st.WorkspaceID)
		}
		last, created, err := r.wakeStream(ctx, st)
		select {
		case r.wakings.done <- wokenStream{workspaceID: st.WorkspaceID, last: last, created: created, err: err}:
		case <-ctx.Done():
		}
	}()
	return errWaking
}

// streamWoken takes the end of a creation in the relay's loop: the workspace is marked for a
// pass, which publishes its events into the new stream. A failed creation is a failed pass;
// the next poll tries again. A workspace whose shard was lost meanwhile is its new owner's.
func (r *Relay) streamWoken(ctx context.Context, res wokenStream, dirty map[string]bool) {
	w := r.wakings.pending[res.workspaceID]
	delete(r.wakings.pending, res.workspaceID)
	if !r.owned[r.shardOf(res.workspaceID)] {
		return
	}
	if res.err != nil {
		if ctx.Err() == nil {
			r.logger.Warn("relay failed", "workspace_id", res.workspaceID, "error", res.err)
		}
		r.passFailed(ctx, res.workspaceID, res.err)
		return
	}
	r.streams[res.workspaceID] = streamMark{last: res.last, verifiedAt: time.Now()}
	wk := woken{created: res.created}
	if w != nil {
		wk.early = w.early
	}
	r.woken[res.workspaceID] = wk
	dirty[res.workspaceID] = true
}
