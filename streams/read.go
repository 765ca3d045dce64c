package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNotHeld is returned by ReadAfter when the stream does not hold the event after the cursor
// (pruned, purged, or not published by the relay): only the log in Postgres can answer.
var ErrNotHeld = errors.New("streams: the stream does not hold the event after the cursor")

// ReadAfter reads up to n events of a workspace's stream after cursor after, in cursor order,
// with one short-lived consumer and one fetch: it is how catch-up reads what a follower's memory
// no longer holds. What it returns is exactly the log's events after+1, after+2, …: it stops
// before a gap or a message the relay did not publish as that sequence's event (Nats-Msg-Id
// <workspace_id>:<cursor>), and fails with ErrNotHeld when that is the first one. No events and
// no error: the stream held nothing after after when it was read. A missing stream fails with
// jetstream.ErrStreamNotFound.
func ReadAfter(ctx context.Context, nc *nats.Conn, workspaceID string, after int64, n int) ([]Event, error) {
	if n < 1 || after < 0 {
		return nil, fmt.Errorf("streams: ReadAfter needs a positive count and a cursor not negative")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	stream := StreamName(workspaceID)
	cons, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   uint64(after) + 1,
		AckPolicy:     jetstream.AckNonePolicy,
		MemoryStorage: true,
		// A reader that dies before deleting it leaves it to the server.
		InactiveThreshold: 30 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("streams: read %s after %d: %w", stream, after, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = js.DeleteConsumer(dctx, stream, cons.CachedInfo().Name)
		cancel()
	}()
	batch, err := cons.FetchNoWait(n)
	if err != nil {
		return nil, fmt.Errorf("streams: read %s after %d: %w", stream, after, err)
	}
	var out []Event
	next, broken := after+1, false
	for m := range batch.Messages() {
		if broken {
			continue // drain the batch
		}
		e, err := decodeMsg(m)
		if err != nil || e.Cursor != next || e.WorkspaceID != workspaceID ||
			m.Headers().Get(jetstream.MsgIDHeader) != relayMsgID(workspaceID, e.Cursor) {
			broken = true
			continue
		}
		out = append(out, e)
		next++
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && len(out) == 0 {
		return nil, fmt.Errorf("streams: read %s after %d: %w", stream, after, err)
	}
	if len(out) == 0 && broken {
		return nil, ErrNotHeld
	}
	return out, nil
}
