package streams

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natterchat/natter/persist"
)

// batch is a run of a workspace's events as the relay publishes them: the events, in cursor
// order without a gap, and their messages (subject, envelope, the relay's headers).
type batch struct {
	events    []persist.Event
	msgs      []*nats.Msg
	handedOff bool // taken from the hand-off, not read from the log
}

// encode places a run of events (the facts their subjects and headers need) and encodes them,
// the one way for the stream and for a preview alike.
func (r *Relay) encode(ctx context.Context, events []persist.Event, handedOff bool) (batch, error) {
	members, private, err := r.placeFacts(ctx, events)
	if err != nil {
		return batch{}, err
	}
	b := batch{events: events, msgs: make([]*nats.Msg, 0, len(events)), handedOff: handedOff}
	for _, e := range events {
		e.PrivateChannel = private[e.ChannelID]
		subject, body, err := EncodeEvent(e)
		if err != nil {
			return batch{}, err
		}
		msg := &nats.Msg{Subject: subject, Data: body, Header: nats.Header{}}
		if e.DirectConversationID != "" {
			msg.Header.Set(HeaderDMMembers, strings.Join(members[e.DirectConversationID], ","))
		}
		if id := e.Scope().MemberID; id != "" {
			msg.Header.Set(HeaderChannelMember, id)
		}
		b.msgs = append(b.msgs, msg)
	}
	return b, nil
}

// publish sends a batch asynchronously, each message expecting its predecessor as the stream's
// last sequence, and waits for every acknowledgement. A retry after a crash is answered as a
// duplicate (same Nats-Msg-Id) or refused as out of sequence; either way nothing is stored twice.
func (r *Relay) publish(ctx context.Context, b batch) error {
	futures := make([]jetstream.PubAckFuture, 0, len(b.events))
	for i, e := range b.events {
		f, err := r.js.PublishMsgAsync(b.msgs[i], jetstream.WithMsgID(relayMsgID(e.WorkspaceID, e.Cursor)),
			jetstream.WithExpectLastSequence(uint64(e.Cursor-1)))
		if err != nil {
			return fmt.Errorf("relay: publish cursor %d: %w", e.Cursor, err)
		}
		futures = append(futures, f)
	}
	for i, f := range futures {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ack := <-f.Ok():
			if ack.Sequence != uint64(b.events[i].Cursor) {
				return fmt.Errorf("relay: cursor %d stored as sequence %d", b.events[i].Cursor, ack.Sequence)
			}
		case err := <-f.Err():
			return fmt.Errorf("relay: publish cursor %d: %w", b.events[i].Cursor, err)
		}
	}
	r.metrics.published.Add(float64(len(b.events)))
	if b.handedOff {
		r.metrics.handedOff.Add(float64(len(b.events)))
	}
	return nil
}

// next reads the run of events after pos: from the hand-off when it holds pos+1 on, else from
// the log. An empty batch is the end of the log.
func (r *Relay) next(ctx context.Context, workspaceID string, pos int64) (batch, error) {
	events := r.handoff.take(workspaceID, pos, r.cfg.Batch)
	handedOff := len(events) > 0
	if !handedOff {
		var err error
		events, err = persist.ReadV(ctx, r.cfg.Store, func(tx *persist.Reader) ([]persist.Event, error) {
			return tx.EventListAfter(ctx, workspaceID, pos, r.cfg.Batch)
		})
		if err != nil {
			return batch{}, err
		}
	}
	if len(events) == 0 {
		return batch{}, nil
	}
	if events[0].Cursor != pos+1 {
		// Events were pruned before they were relayed; the next pass purges past them.
		return batch{}, fmt.Errorf("relay: cursor %d follows %d: a prune overtook the relay", events[0].Cursor, pos)
	}
	return r.encode(ctx, events, handedOff)
}

// preview sends a waking workspace's first events (those after the last relayed cursor) to
// the sockets waiting for its stream, over core NATS (PreviewSubject), before the stream is
// created: on a cluster the creation of a replicated stream is most of a wake-up (about 80 ms
// of the 82 ms from commit to frame at the median, BenchmarkDormantWake), and the feeds need
// not wait for it. The same messages then go into the stream, where the feeds carry on after
// the last one they had (docs/realtime.md). A preview is best effort: nil when the events
// cannot be read, or when the log does not go on from the relayed cursor (a prune: the pass
// sorts that out).
func (r *Relay) preview(ctx context.Context, st persist.RelayState) *batch {
	if st.PrunedThrough > st.Relayed {
		return nil
	}
	b, err := r.next(ctx, st.WorkspaceID, st.Relayed)
	if err != nil || len(b.events) == 0 {
		return nil
	}
	subject := PreviewSubject(st.WorkspaceID)
	for i, m := range b.msgs {
		h := nats.Header{}
		for k, v := range m.Header {
			h[k] = v
		}
		h.Set(headerSubject, m.Subject)
		h.Set(jetstream.MsgIDHeader, relayMsgID(st.WorkspaceID, b.events[i].Cursor))
		if err := r.cfg.NATS.PublishMsg(&nats.Msg{Subject: subject, Data: m.Data, Header: h}); err != nil {
			break // the stream delivers them as ever
		}
	}
	r.metrics.previewed.Add(float64(len(b.events)))
	return &b
}
