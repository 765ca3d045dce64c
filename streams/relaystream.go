package streams

// A workspace's stream as the relay keeps it: verified against the log before each relay,
// rebuilt when it lost what it should hold, created at a cursor so that seq == cursor.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natterchat/natter/persist"
)

// verifyStream checks a workspace's stream against its log and returns the stream's last
// sequence, the position to continue from. A missing stream is created: after the last relayed
// cursor when the relay retired it, else (new, or lost) from the oldest retained cursor, at
// most StreamMaxMsgs back. One that lost retained events (emptied, or behind a relayed
// position), holds cursors the log never issued, or ends in a message the relay did not publish
// as that sequence's event is rebuilt the same way.
func (r *Relay) verifyStream(ctx context.Context, st persist.RelayState) (uint64, error) {
	name := StreamName(st.WorkspaceID)
	oldest := uint64(st.PrunedThrough) + 1
	s, err := r.js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		if st.StreamRetired {
			// Nothing to rebuild: whoever needs an older cursor reads it from Postgres.
			return r.createStream(ctx, st.WorkspaceID, max(oldest, uint64(st.Relayed)+1))
		}
		if st.Relayed > 0 {
			r.metrics.rebuilds.Inc()
			r.logger.Warn("stream lost; rebuilding it from the log", "workspace_id", st.WorkspaceID, "stream", name)
		}
		return r.createStream(ctx, st.WorkspaceID, r.rebuildFrom(st))
	}
	if err != nil {
		return 0, err
	}
	state := s.CachedInfo().State
	// The first cursor the stream must hold: the one it was created with, or a later one the
	// message limit let go.
	first := max(oldest, uint64(st.StreamFirst))
	healthy := state.LastSeq <= uint64(st.Head) && state.LastSeq >= uint64(st.Relayed)
	if state.Msgs == 0 {
		healthy = healthy && state.LastSeq < first // nothing retained is missing
	} else {
		kept := state.LastSeq + 1 - min(state.LastSeq, uint64(r.cfg.StreamMaxMsgs))
		healthy = healthy && state.FirstSeq <= max(first, kept)
	}
	if healthy && state.Msgs > 0 {
		// The bounds cannot tell a relayed event from a message someone else published into
		// the stream: only the relay's message id, <workspace_id>:<cursor> with cursor equal to
		// the sequence, makes the last sequence a position to continue from.
		healthy, err = r.lastIsRelayed(ctx, s, st.WorkspaceID, state.LastSeq)
		if err != nil {
			return 0, err
		}
	}
	if healthy {
		if st.StreamRetired { // marked, then the relay stopped before deleting it: it stays
			if err := r.cfg.Store.RelayStreamCreated(ctx, st.WorkspaceID, int64(first)); err != nil {
				return 0, err
			}
		}
		return state.LastSeq, r.conformStream(ctx, s)
	}
	r.metrics.rebuilds.Inc()
	r.logger.Warn("stream does not match the log; rebuilding it", "workspace_id", st.WorkspaceID, "stream", name,
		"first_seq", state.FirstSeq, "last_seq", state.LastSeq, "messages", state.Msgs, "head", st.Head, "oldest_retained", oldest)
	if err := r.js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, err
	}
	return r.createStream(ctx, st.WorkspaceID, r.rebuildFrom(st))
}

// rebuildFrom is the first cursor a rebuilt stream holds: the oldest retained one, or as many
// before the head as the stream may keep.
func (r *Relay) rebuildFrom(st persist.RelayState) uint64 {
	return uint64(max(st.PrunedThrough+1, st.Head-r.cfg.StreamMaxMsgs+1))
}

// lastIsRelayed reports whether the message at seq, the stream's last, is the relay's copy of
// the event with cursor seq. A message deleted from under the stream counts as foreign.
func (r *Relay) lastIsRelayed(ctx context.Context, s jetstream.Stream, workspaceID string, seq uint64) (bool, error) {
	m, err := s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("relay: read the stream's last message: %w", err)
	}
	return m.Header.Get(jetstream.MsgIDHeader) == relayMsgID(workspaceID, int64(seq)), nil
}

// relayMsgID is the Nats-Msg-Id of the event with cursor in workspaceID's stream.
func relayMsgID(workspaceID string, cursor int64) string {
	return workspaceID + ":" + strconv.FormatInt(cursor, 10)
}

// wakeStream creates the stream of a workspace whose stream the relay retired, after its last
// relayed cursor, and returns the position to continue from and the stream's first cursor, to be
// recorded (RelayStreamCreated) once the pass has published its events. A waking workspace's
// first event waits for nothing else: no look-up of a stream the log says is gone, no write
// before the publish (the first frame of a dormant workspace went through both, on a loaded
// machine the slowest steps of its wake-up). A stream that is there after all (kept by a crash
// between the mark and the deletion, or not empty) is verified as ever.
func (r *Relay) wakeStream(ctx context.Context, st persist.RelayState) (last, created uint64, err error) {
	first := max(uint64(st.PrunedThrough)+1, uint64(st.Relayed)+1)
	s, err := r.js.CreateStream(ctx, r.streamConfig(st.WorkspaceID, first))
	if err == nil && s.CachedInfo().State.Msgs == 0 && s.CachedInfo().State.LastSeq == first-1 {
		return first - 1, first, nil
	}
	if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return 0, 0, err
	}
	last, err = r.verifyStream(ctx, st)
	return last, 0, err
}

// createStream creates a workspace's stream starting at cursor first, records it, and returns
// the position to continue from (first-1).
func (r *Relay) createStream(ctx context.Context, workspaceID string, first uint64) (uint64, error) {
	_, err := r.js.CreateStream(ctx, r.streamConfig(workspaceID, first))
	if err != nil {
		return 0, err
	}
	return first - 1, r.cfg.Store.RelayStreamCreated(ctx, workspaceID, int64(first))
}

func (r *Relay) streamConfig(workspaceID string, first uint64) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamName(workspaceID),
		Description: "Natter event log of workspace " + workspaceID + " (sequence = cursor)",
		Subjects:    []string{EventsSubjects(workspaceID)},
		Storage:     jetstream.FileStorage,
		Replicas:    r.cfg.Replicas,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		// A count, not bytes: a byte limit is reserved against the server's storage up front,
		// for every stream, idle or not.
		MaxMsgs:     r.cfg.StreamMaxMsgs,
		Duplicates:  2 * time.Minute,
		FirstSeq:    first,
		AllowDirect: true,
	}
}
