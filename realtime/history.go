package realtime

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/streams"
)

// Catch-up older than a feed's tail reads the workspace's JetStream stream (sequence == cursor)
// instead of Postgres. The stream is read in blocks of historyBlock cursors (1…256, 257…512,
// …): each block is read once, with one consumer and one fetch, for every socket that needs it
// at the time, and kept a while for those that follow, so a storm of reconnects from a few
// cursors costs a few reads, not one per socket. Postgres answers only what the stream does not
// hold (pruned, purged, a gap) or when the stream cannot be read.
const (
	historyBlock  = 256
	historyBlocks = 16               // blocks a feed keeps (at most 4,096 events' frames)
	historyIdle   = 30 * time.Second // a block nobody read for this long is dropped
	// historyRetry is how long a failed read is the answer for everyone, so that a stream that
	// cannot be read (not created yet, NATS away) costs one attempt, not one per socket.
	historyRetry = time.Second
	historyWait  = 2 * time.Second // bounds one read (the workers that need the block wait for it)
)

// history is a feed's cache of stream blocks.
type history struct {
	mu     sync.Mutex
	blocks map[int64]*block // by first cursor

	// The retained window's start, read from Postgres at most every historyWindow: a prune
	// commits before the relay purges the stream, and a cursor it left behind must still get
	// 4001 from Postgres rather than events from the stream. windowMu is held across the read,
	// so concurrent catch-ups share it.
	windowMu sync.Mutex
	pruned   int64
	prunedAt time.Time
}

// historyWindow is how long a read of the retained window is used.
const historyWindow = time.Second

// block is the events of one block as the stream held them when it was read: from first on,
// without a gap, possibly fewer than historyBlock (the stream ended there, or a gap followed).
type block struct {
	first  int64
	ready  chan struct{} // closed once events and err are set; both are read-only after
	events []*liveEvent
	err    error
	readAt time.Time // when the read finished; guarded by history.mu
	used   time.Time // guarded by history.mu
}

// streamResult says how a catch-up from the stream went.
type streamResult uint8

const (
	// streamMissed: the stream does not hold the next event, or could not be read: ask Postgres.
	streamMissed streamResult = iota
	// streamServed: events were read (at least one cursor of progress).
	streamServed
	// streamAtEnd: the stream held nothing after the cursor and the feed is not live yet (wait
	// for it: the hand-off then checks the cursor against the feed's start), or the cursor is the
	// feed's last (the tail answers).
	streamAtEnd
)

// streamAfter is catch-up from the stream: the frames after cursor after that viewer may see,
// at least one event's and at most maxBytes, up to the end of after's block, with the last
// cursor read. It never says the log ends there: the hand-off to live goes through the tail (or
// Postgres), which knows what the feed has dispatched.
func (f *feed) streamAfter(ctx context.Context, after int64, maxBytes int, viewer persist.Viewer) (
	frames [][]byte, size int, pos int64, res streamResult) {
	if live, last := f.liveState(); (live && after > last) || after > math.MaxInt64-historyBlock {
		return nil, 0, after, streamMissed // a cursor past what was dispatched: Postgres judges it
	}
	if pruned, err := f.prunedThrough(ctx); err != nil || (after > 0 && after < pruned) {
		return nil, 0, after, streamMissed
	}
	first := after/historyBlock*historyBlock + 1
	var short *block
	for attempt := 0; attempt < 2; attempt++ {
		b := f.history.get(f, ctx, first, short)
		select {
		case <-b.ready:
		case <-ctx.Done():
			return nil, 0, after, streamMissed
		}
		if b.err != nil {
			return nil, 0, after, streamMissed
		}
		if idx := int(after + 1 - first); idx < len(b.events) {
			pos = after
			for _, ev := range b.events[idx:] {
				if ev.visibleTo(viewer) {
					if len(frames) > 0 && size+len(ev.frame) > maxBytes {
						break
					}
					frames, size = append(frames, ev.frame), size+len(ev.frame)
				}
				pos = ev.cursor
			}
			return frames, size, pos, streamServed
		}
		// The block ended before after+1 when it was read.
		live, last := f.liveState()
		if !live || after == last {
			return nil, 0, after, streamAtEnd // the tail takes over (it went live meanwhile)
		}
		if after > last || attempt > 0 {
			return nil, 0, after, streamMissed // ahead of the feed, or the stream has a gap
		}
		short = b // dispatched since, so the stream holds it: read the block again
	}
	return nil, 0, after, streamMissed
}

// get returns the block that starts at first, reading it when it is not kept (or is stale, the
// block the caller found too short, or a failure older than historyRetry). The caller that
// starts a read does it; the others wait on ready. (b.err is looked at only once readAt is set,
// which happens after it was written.)
func (h *history) get(f *feed, ctx context.Context, first int64, stale *block) *block {
	now := time.Now()
	h.mu.Lock()
	b := h.blocks[first]
	if b != nil && b != stale && (b.readAt.IsZero() || b.err == nil || now.Sub(b.readAt) < historyRetry) {
		b.used = now
		h.mu.Unlock()
		return b
	}
	b = &block{first: first, ready: make(chan struct{}), used: now}
	if h.blocks == nil {
		h.blocks = map[int64]*block{}
	}
	h.blocks[first] = b
	h.evictLocked()
	h.mu.Unlock()
	f.readBlock(ctx, b)
	h.mu.Lock()
	b.readAt = time.Now()
	h.mu.Unlock()
	close(b.ready)
	return b
}

// evictLocked keeps at most historyBlocks, dropping the least recently used. Caller holds h.mu.
func (h *history) evictLocked() {
	for len(h.blocks) > historyBlocks {
		var oldest *block
		for _, b := range h.blocks {
			if oldest == nil || b.used.Before(oldest.used) {
				oldest = b
			}
		}
		delete(h.blocks, oldest.first)
	}
}

// expire drops the blocks nobody read for historyIdle.
func (h *history) expire(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, b := range h.blocks {
		if now.Sub(b.used) > historyIdle {
			delete(h.blocks, k)
		}
	}
}

// clear forgets every block: the stream skipped cursors (a prune or a rebuild).
func (h *history) clear() {
	h.mu.Lock()
	clear(h.blocks)
	h.mu.Unlock()
}

// readBlock reads a block's events from the stream, with the facts their visibility needs.
func (f *feed) readBlock(ctx context.Context, b *block) {
	rctx, cancel := context.WithTimeout(ctx, historyWait)
	defer cancel()
	f.hub.metrics.catchUpReads.WithLabelValues("stream").Inc()
	events, err := streams.ReadAfter(rctx, f.hub.cfg.NATS, f.workspaceID, b.first-1, historyBlock)
	if err != nil {
		b.err = err
		return
	}
	b.events = make([]*liveEvent, len(events))
	for i, e := range events {
		b.events[i] = &liveEvent{cursor: e.Cursor, scope: e.Scope, facts: f.factsFor(e.Scope, e.Header), frame: textFrame(e.Envelope)}
	}
}

// prunedThrough is the workspace's pruned_through, at most historyWindow old.
func (f *feed) prunedThrough(ctx context.Context) (int64, error) {
	h := &f.history
	h.windowMu.Lock()
	defer h.windowMu.Unlock()
	if !h.prunedAt.IsZero() && time.Since(h.prunedAt) < historyWindow {
		return h.pruned, nil
	}
	win, err := persist.WithTxV(ctx, f.hub.store, func(tx *persist.Tx) (persist.EventWindow, error) {
		return tx.EventWindowGet(ctx, f.workspaceID)
	})
	if err != nil {
		if h.prunedAt.IsZero() {
			return 0, err
		}
		// Postgres is away: the window read last still tells what a prune left behind (a
		// prune needs Postgres too), so the stream keeps serving; ask again in a moment.
		f.hub.logger.Warn("retained window lookup failed; using the last one read", "workspace_id", f.workspaceID, "error", err)
		h.prunedAt = time.Now()
		return h.pruned, nil
	}
	h.pruned, h.prunedAt = win.PrunedThrough, time.Now()
	return h.pruned, nil
}

// liveState reports whether the feed is live and the last cursor it dispatched: the stream holds
// every cursor up to it.
func (f *feed) liveState() (live bool, last int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.liveFrom != 0, f.last
}

// postgresPage is catch-up's last resort: a page of the log from Postgres (at most catchUpPage
// events and half the queue's bytes, at least one event), for what neither the tail nor the
// stream holds.
func (s *socket) postgresPage(ctx context.Context, after int64) (frames [][]byte, size int, next int64, more bool, err error) {
	s.hub.metrics.catchUpReads.WithLabelValues("postgres").Inc()
	page, err := persist.WithTxV(ctx, s.hub.store, func(tx *persist.Tx) (persist.EventPage, error) {
		return tx.EventPageFor(ctx, s.actor, s.workspaceID, after, catchUpPage, false)
	})
	if err != nil {
		return nil, 0, after, false, err
	}
	frames = make([][]byte, 0, len(page.Events))
	next, more = page.Next, page.HasMore
	for i, e := range page.Events {
		body, err := e.MarshalJSON()
		if err != nil {
			return nil, 0, after, false, err
		}
		frame := textFrame(body)
		if i > 0 && size+len(frame) > s.hub.cfg.QueueBytes/2 {
			next, more = page.Events[i-1].Cursor, true
			break
		}
		frames, size = append(frames, frame), size+len(frame)
	}
	return frames, size, next, more, nil
}
