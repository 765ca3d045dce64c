package streams

import (
	"strings"

	"github.com/natterchat/natter/persist"
)

// Subject roots of CONTRACT.md §Bots over NATS.
const (
	eventsRoot    = "natter.events."
	ephemeralRoot = "natter.ephemeral."
	wakeRoot      = "natter.relay.wake."
	previewRoot   = "natter.relay.preview."
	presenceRoot  = "natter.presence."
	selfRoot      = "natter.self."
)

// HeaderDMMembers is the header the relay puts on every event of a direct conversation: the
// conversation's member ids, comma-separated (member sets never change). It carries the fact the
// visibility rule needs, so consumers need not ask Postgres while they deliver.
const HeaderDMMembers = "Natter-Dm-Members"

// HeaderChannelMember is the header the relay puts on channel.member_added and
// channel.member_removed: the person the event is about, who sees it though they are not (or no
// longer) in the channel.
const HeaderChannelMember = "Natter-Channel-Member"

// StreamName is the JetStream stream that carries a workspace's log.
func StreamName(workspaceID string) string { return "natter_events_" + workspaceID }

// EventsSubjects is the subject filter of a workspace's stream.
func EventsSubjects(workspaceID string) string { return eventsRoot + workspaceID + ".>" }

// PlaceEventSubjects matches a workspace's events of one type in its channels and direct
// conversations (not workspace-wide ones): natter.events.<workspace_id>.*.*.<type>.
func PlaceEventSubjects(workspaceID, eventType string) string {
	return eventsRoot + workspaceID + ".*.*." + eventType
}

// WorkspaceEventSubject is where a workspace's workspace-wide events of one type are published:
// natter.events.<workspace_id>.ws.<type>.
func WorkspaceEventSubject(workspaceID, eventType string) string {
	return eventsRoot + workspaceID + ".ws." + eventType
}

// EphemeralSubjects matches a workspace's ephemeral events.
func EphemeralSubjects(workspaceID string) string { return ephemeralRoot + workspaceID + ".>" }

// PresenceSubject carries a workspace's presence.changed events, as the replicas derive them
// from open sockets (realtime's presence). It is a root of its own, outside what bots are
// granted: only sockets that ask for presence receive them.
func PresenceSubject(workspaceID string) string { return presenceRoot + workspaceID }

// SelfSubject carries a persist.ChannelStandingUpdated, one person's own standing in a channel
// (joined, left, starred, muted), to that person's sockets on every replica, so their other
// tabs follow: natter.self.<workspace_id>.<user_id>.<channel_id>. A root of its own, outside what
// bots are granted: only the server publishes there.
func SelfSubject(e persist.Event) string {
	return selfRoot + e.WorkspaceID + "." + e.ActorID + "." + e.ChannelID
}

// SelfSubjects is every SelfSubject of a workspace.
func SelfSubjects(workspaceID string) string { return selfRoot + workspaceID + ".*.*" }

// ParseSelfSubject reads the person and the channel of a SelfSubject.
func ParseSelfSubject(subject string) (userID, channelID string, ok bool) {
	if !strings.HasPrefix(subject, selfRoot) {
		return "", "", false
	}
	parts := strings.Split(subject[len(selfRoot):], ".")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return "", "", false
	}
	return parts[1], parts[2], true
}

// EventSubject is where a durable event is published: natter.events.<workspace_id> followed by
// .ws.<type> (workspace-wide), .ch.<channel_id>.<type> (a public channel),
// .pch.<channel_id>.<type> (a private channel: a subject of its own, so that a bot's permission
// for .ch.> never covers one) or .dm.<conversation_id>.<type>.
func EventSubject(e persist.Event) string { return subjectOf(eventsRoot, e) }

// EphemeralSubject is the same shape under natter.ephemeral.
func EphemeralSubject(e persist.Event) string { return subjectOf(ephemeralRoot, e) }

func subjectOf(root string, e persist.Event) string {
	var b strings.Builder
	b.Grow(len(root) + len(e.WorkspaceID) + len(e.ChannelID) + len(e.DirectConversationID) + len(e.Type) + 8)
	b.WriteString(root)
	b.WriteString(e.WorkspaceID)
	switch {
	case e.DirectConversationID != "":
		b.WriteString(".dm.")
		b.WriteString(e.DirectConversationID)
	case e.ChannelID != "" && e.PrivateChannel:
		b.WriteString(".pch.")
		b.WriteString(e.ChannelID)
	case e.ChannelID != "":
		b.WriteString(".ch.")
		b.WriteString(e.ChannelID)
	default:
		b.WriteString(".ws")
	}
	b.WriteByte('.')
	b.WriteString(e.Type)
	return b.String()
}

// ParseSubject reads the workspace, scope and type back from an event or ephemeral subject, so a
// reader can apply visibility without decoding the envelope. ok is false for other subjects.
func ParseSubject(subject string) (workspaceID string, scope persist.EventScope, eventType string, ok bool) {
	rest, found := strings.CutPrefix(subject, eventsRoot)
	if !found {
		if rest, found = strings.CutPrefix(subject, ephemeralRoot); !found {
			return "", scope, "", false
		}
	}
	workspaceID, rest, _ = strings.Cut(rest, ".")
	kind, rest, _ := strings.Cut(rest, ".")
	switch kind {
	case "ws":
		eventType = rest
	case "ch", "pch":
		scope.ChannelID, eventType, _ = strings.Cut(rest, ".")
		scope.PrivateChannel = kind == "pch"
		if scope.ChannelID == "" {
			return "", scope, "", false // would read as workspace-wide
		}
	case "dm":
		scope.DirectConversationID, eventType, _ = strings.Cut(rest, ".")
		if scope.DirectConversationID == "" {
			return "", scope, "", false // would read as workspace-wide, visible beyond the conversation
		}
	default:
		return "", scope, "", false
	}
	return workspaceID, scope, eventType, workspaceID != "" && eventType != ""
}
