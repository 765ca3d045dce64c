package persist

import (
	"context"
	"encoding/json"
)

// Ephemeral event types: delivered live to sockets over core NATS, never stored.
const (
	EphemeralTypingStarted   = "typing.started"
	EphemeralTypingStopped   = "typing.stopped"
	EphemeralPresenceChanged = "presence.changed"
	EphemeralAgentProgress   = "agent.progress"
)

// IsEphemeralType reports whether t is one of the ephemeral event types.
func IsEphemeralType(t string) bool {
	switch t {
	case EphemeralTypingStarted, EphemeralTypingStopped, EphemeralPresenceChanged, EphemeralAgentProgress:
		return true
	}
	return false
}

// EphemeralPayloadLimit caps an ephemeral payload: it is copied to every socket of the target.
const EphemeralPayloadLimit = 16 << 10

// EphemeralInput is a request to publish an ephemeral event.
type EphemeralInput struct {
	WorkspaceID          string
	ChannelID            string
	DirectConversationID string
	Type                 string
	Payload              json.RawMessage
}

// EphemeralAuthorize checks that actor may send an ephemeral event to exactly one target it can
// read, and returns the event to publish (cursor 0: clients never store it). agent.progress
// further needs a bot token holding agent_activity:write, and dms:write for a conversation. The
// payload is the client's object with user_id (the publisher) and channel_id or
// direct_conversation_id (the target) set by the server over anything the client sent there.
// Codes: invalid_request, not_found (target, workspace), forbidden.
func (tx *Tx) EphemeralAuthorize(ctx context.Context, actor Actor, in EphemeralInput) (Event, error) {
	if !IsEphemeralType(in.Type) {
		return Event{}, Invalid("type must be typing.started, typing.stopped, presence.changed or agent.progress")
	}
	if (in.ChannelID == "") == (in.DirectConversationID == "") {
		return Event{}, Invalid("name exactly one target: channel_id or direct_conversation_id")
	}
	if len(in.Payload) > EphemeralPayloadLimit {
		return Event{}, Invalid("payload must be at most %d bytes", EphemeralPayloadLimit)
	}
	payload := in.Payload
	if len(payload) == 0 || string(payload) == "null" {
		payload = json.RawMessage("{}")
	}
	if payload[0] != '{' {
		return Event{}, Invalid("payload must be a JSON object")
	}
	if in.Type == EphemeralAgentProgress {
		if !actor.IsBotToken() || !actor.HasScope(ScopeAgentActivityWrite) {
			return Event{}, Forbidden("agent.progress needs a bot token holding agent_activity:write")
		}
		if in.DirectConversationID != "" && !actor.HasScope(ScopeDMsWrite) {
			return Event{}, Forbidden("agent.progress in a direct conversation also needs dms:write")
		}
	}
	ev := Event{ID: NewID(PrefixEvent, tx.now), Type: in.Type, ActorID: actor.UserID, CreatedAt: tx.now, Payload: payload}
	if in.ChannelID != "" {
		c, _, err := tx.ChannelForRead(ctx, actor, in.ChannelID)
		if err != nil {
			return Event{}, err
		}
		ev.WorkspaceID, ev.ChannelID, ev.PrivateChannel = c.WorkspaceID, c.ID, c.Visibility == VisibilityPrivate
	} else {
		if err := tx.queryRow(ctx, `SELECT workspace_id FROM dm_members WHERE dm_id = $1 AND user_id = $2`,
			in.DirectConversationID, actor.UserID).Scan(&ev.WorkspaceID); err != nil {
			return Event{}, notFoundAs(err, "conversation")
		}
		if _, err := tx.requireMember(ctx, ev.WorkspaceID, actor); err != nil {
			return Event{}, err
		}
		ev.DirectConversationID = in.DirectConversationID
	}
	if in.WorkspaceID != "" && in.WorkspaceID != ev.WorkspaceID {
		return Event{}, NotFound("channel or conversation in this workspace")
	}
	var err error
	ev.Payload, err = ephemeralPayload(payload, ev)
	return ev, err
}

// ephemeralPayload sets on the client's payload object the fields the server vouches for: who
// published the event and where, so no client can speak for another or name another place.
// Codes: invalid_request (not a JSON object).
func ephemeralPayload(raw json.RawMessage, ev Event) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, Invalid("payload must be a JSON object")
	}
	delete(fields, "channel_id")
	delete(fields, "direct_conversation_id")
	set := func(key, value string) {
		fields[key], _ = json.Marshal(value) // a string always encodes
	}
	set("user_id", ev.ActorID)
	if ev.ChannelID != "" {
		set("channel_id", ev.ChannelID)
	} else {
		set("direct_conversation_id", ev.DirectConversationID)
	}
	return json.Marshal(fields)
}
