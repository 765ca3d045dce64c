package streams

import (
	"context"
	"slices"
	"sync"

	"github.com/natterchat/natter/persist"
)

// privateChannels remembers which channels are private. A channel's visibility is fixed at
// creation, so an answer never goes stale: the relay asks Postgres once per channel, not once
// per batch (posts reach the relay by hand-off, without a read, and should stay that way).
type privateChannels struct {
	mu    sync.Mutex
	known map[string]bool
}

func newPrivateChannels() *privateChannels { return &privateChannels{known: map[string]bool{}} }

// maxKnownChannels bounds the cache; past it, it starts over.
const maxKnownChannels = 100_000

// placeFacts reads what the subjects and headers of a batch of events need: the members of the
// direct conversations it is about (a query when there are any), and which of its channels are
// private (a query only for channels the relay has not seen yet).
func (r *Relay) placeFacts(ctx context.Context, events []persist.Event) (map[string][]string, map[string]bool, error) {
	var dms, unknown []string
	private := map[string]bool{}
	r.private.mu.Lock()
	for _, e := range events {
		if e.DirectConversationID != "" && !slices.Contains(dms, e.DirectConversationID) {
			dms = append(dms, e.DirectConversationID)
		}
		if e.ChannelID == "" {
			continue
		}
		if p, known := r.private.known[e.ChannelID]; known {
			private[e.ChannelID] = p
		} else if !slices.Contains(unknown, e.ChannelID) {
			unknown = append(unknown, e.ChannelID)
		}
	}
	r.private.mu.Unlock()
	if len(dms) == 0 && len(unknown) == 0 {
		return nil, private, nil
	}
	type facts struct {
		members map[string][]string
		private map[string]bool
	}
	f, err := persist.ReadV(ctx, r.cfg.Store, func(tx *persist.Reader) (facts, error) {
		var f facts
		if len(dms) > 0 {
			v, err := tx.VisibilityFactsFor(ctx, events[0].WorkspaceID, dms, nil)
			if err != nil {
				return f, err
			}
			f.members = v.DMMembers
		}
		var err error
		f.private, err = tx.PrivateChannelsAmong(ctx, events[0].WorkspaceID, unknown)
		return f, err
	})
	if err != nil {
		return nil, nil, err
	}
	r.private.mu.Lock()
	if len(r.private.known)+len(unknown) > maxKnownChannels {
		clear(r.private.known)
	}
	for _, id := range unknown {
		private[id] = f.private[id]
		r.private.known[id] = f.private[id]
	}
	r.private.mu.Unlock()
	return f.members, private, nil
}
