package realtime

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/streams"
)

// The visibility facts a feed keeps for its events (who may see a direct conversation, a
// private channel, the guest channel), learned from the events it dispatches and read from
// Postgres only for what they do not give.

// learn follows the guest channel through channel.created and channel.updated, and the members
// of private channels through channel.member_added and channel.member_removed, as they are
// dispatched (not as catch-up reads them: those are older than what the feed knows).
func (f *feed) learn(eventType string, data []byte) {
	switch eventType {
	case "channel.created", "channel.updated":
		f.factsMu.Lock()
		f.learnGuestChannel(data)
		f.factsMu.Unlock()
	case "channel.member_added", "channel.member_removed":
		f.factsMu.Lock()
		f.learnChannelMember(eventType == "channel.member_added", data)
		f.factsMu.Unlock()
	}
}

// learnChannelMember applies a membership event to a private channel's members, when the feed
// knows them (otherwise they are read when an event of the channel needs them). Caller holds
// factsMu.
func (f *feed) learnChannelMember(added bool, data []byte) {
	var ev struct {
		Payload struct {
			ChannelID string `json:"channel_id"`
			UserID    string `json:"user_id"`
		} `json:"payload"`
	}
	if json.Unmarshal(data, &ev) != nil || ev.Payload.ChannelID == "" || ev.Payload.UserID == "" {
		return
	}
	members, known := f.private[ev.Payload.ChannelID]
	if !known {
		return
	}
	next := slices.DeleteFunc(slices.Clone(members), func(id string) bool { return id == ev.Payload.UserID })
	if added {
		next = append(next, ev.Payload.UserID)
	}
	f.private[ev.Payload.ChannelID] = next
}

// factsFor returns the visibility facts an event needs. They travel with the event or are kept
// here, learned from events: a direct conversation's members come in the relay's header
// (streams.HeaderDMMembers; member sets never change), the guest channel is loaded when the
// feed starts and followed through channel.created and channel.updated, and a private channel's
// members are loaded when its first event comes and followed through its membership events
// (learn), so a member removed sees none of the channel's events after the removal. Only what neither
// gives (an ephemeral event of a conversation not seen yet, a guest channel not loaded) is read
// from the database, without holding the feed's facts lock across the query. A failed lookup
// yields facts that show the event to nobody who needs them.
func (f *feed) factsFor(scope persist.EventScope, header nats.Header) *persist.VisibilityFacts {
	dm := scope.DirectConversationID
	ch := ""
	if scope.PrivateChannel {
		ch = scope.ChannelID
	}
	f.factsMu.Lock()
	_, dmKnown := f.dms[dm]
	if dm != "" && !dmKnown {
		if v := header.Values(streams.HeaderDMMembers); len(v) > 0 {
			f.rememberDM(dm, splitMembers(v[0]))
			dmKnown = true
		}
	}
	_, chKnown := f.private[ch]
	lookup := !f.guestOK || (dm != "" && !dmKnown) || (ch != "" && !chKnown)
	f.factsMu.Unlock()
	if lookup {
		f.lookUpFacts(dm, ch)
	}
	f.factsMu.Lock()
	defer f.factsMu.Unlock()
	out := &persist.VisibilityFacts{GuestChannelID: f.guestCh}
	if dm != "" {
		out.DMMembers = map[string][]string{dm: f.dms[dm]}
	}
	if ch != "" {
		out.PrivateMembers = map[string][]string{ch: f.private[ch]}
	}
	return out
}

// learnGuestChannel follows the guest channel through a channel event's payload (the channel as
// it now is). Caller holds factsMu.
func (f *feed) learnGuestChannel(data []byte) {
	var ev struct {
		Payload struct {
			Channel struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"channel"`
		} `json:"payload"`
	}
	if json.Unmarshal(data, &ev) != nil || ev.Payload.Channel.ID == "" {
		f.guestOK = false // look it up again
		return
	}
	switch c := ev.Payload.Channel; {
	case c.Name == persist.GuestChannel:
		f.guestCh = c.ID
	case c.ID == f.guestCh:
		f.guestCh = "" // renamed away
	}
}

// rememberDM keeps a conversation's members. Caller holds factsMu.
func (f *feed) rememberDM(dm string, members []string) {
	if len(f.dms) > 10000 {
		clear(f.dms)
	}
	f.dms[dm] = members
}

// rememberPrivate keeps a private channel's members. Caller holds factsMu.
func (f *feed) rememberPrivate(ch string, members []string) {
	if len(f.private) > 10000 {
		clear(f.private)
	}
	if members == nil {
		members = []string{} // known to have no members (or not to be private: then unused)
	}
	f.private[ch] = members
}

func splitMembers(v string) []string {
	if v == "" {
		return []string{}
	}
	return strings.Split(v, ",")
}

// lookUpFacts reads the guest channel and, when dm or ch (a private channel) is set, its members
// from the database.
func (f *feed) lookUpFacts(dm, ch string) {
	var ids, chs []string
	if dm != "" {
		ids = []string{dm}
	}
	if ch != "" {
		chs = []string{ch}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	facts, err := persist.ReadV(ctx, f.hub.store, func(tx *persist.Reader) (persist.VisibilityFacts, error) {
		return tx.VisibilityFactsFor(ctx, f.workspaceID, ids, chs)
	})
	cancel()
	if err != nil {
		f.hub.logger.Warn("visibility facts lookup failed", "workspace_id", f.workspaceID, "error", err)
		return
	}
	f.factsMu.Lock()
	defer f.factsMu.Unlock()
	// A guest channel already followed through the events is newer than what this read saw.
	if !f.guestOK {
		f.guestCh, f.guestOK = facts.GuestChannelID, true
	}
	if dm != "" {
		f.rememberDM(dm, facts.DMMembers[dm])
	}
	if _, known := f.private[ch]; ch != "" && !known {
		// Members followed through the events since the read began are newer than the read.
		f.rememberPrivate(ch, facts.PrivateMembers[ch])
	}
}
