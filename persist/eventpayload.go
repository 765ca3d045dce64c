package persist

// Every durable event's envelope and payload are built here, one function per kind of event, so
// a type carries the same fields wherever it is appended. Besides the resource itself, each
// payload names in its own fields the ids SPEC §Events gives its type, even where the envelope
// already has them: ClickClack clients read them from the payload (CONTRACT.md §Compatibility).

// messagePayload is the payload of the four events that carry a whole message: message.created,
// thread.reply_created, message.updated and message.deleted. Clients find the message by
// message_id and its author by author_id; nonce and correlation_id let a client match the event
// to the request that caused it.
type messagePayload struct {
	MessageID            string       `json:"message_id"`
	AuthorID             string       `json:"author_id"`
	ChannelID            string       `json:"channel_id,omitempty"`
	DirectConversationID string       `json:"direct_conversation_id,omitempty"`
	ThreadRootID         string       `json:"thread_root_id"`
	Nonce                string       `json:"nonce,omitempty"`
	CorrelationID        string       `json:"correlation_id,omitempty"`
	Message              Message      `json:"message"`
	ThreadState          *ThreadState `json:"thread_state,omitempty"`
}

// event is the envelope of an event about this message: its place, its id and its channel_seq.
func (m Message) event(typ, actorID string, payload any) EventInput {
	return EventInput{WorkspaceID: m.WorkspaceID, Type: typ, ChannelID: m.ChannelID,
		DirectConversationID: m.DirectConversationID, MessageID: m.ID, Seq: m.ChannelSeq,
		ActorID: actorID, Payload: payload}
}

// messageEvent is one of the four events that carry the message as it now reads, appended by
// actor's request; ts is the root's thread state, given with thread.reply_created.
func (m Message) messageEvent(typ string, actor Actor, ts *ThreadState) EventInput {
	return m.event(typ, actor.UserID, messagePayload{MessageID: m.ID, AuthorID: m.AuthorID,
		ChannelID: m.ChannelID, DirectConversationID: m.DirectConversationID, ThreadRootID: m.ThreadRootID,
		Nonce: m.Nonce, CorrelationID: actor.CorrelationID, Message: m, ThreadState: ts})
}

// threadStateEvent is thread.state_updated for root (which needs only its ids, place and
// channel_seq set): the root's new thread state.
func (root Message) threadStateEvent(actorID string, ts ThreadState) EventInput {
	return root.event("thread.state_updated", actorID, placePayload(root.Place(), map[string]any{
		"root_message_id": root.ID, "message_id": root.ID, "thread_state": ts}))
}

// reactionEvent is reaction.added or reaction.removed on m: count is the emoji's total after
// the change, user_id who reacted.
func (m Message) reactionEvent(typ, actorID, emoji string, count int64) EventInput {
	return m.event(typ, actorID, map[string]any{"message_id": m.ID, "emoji": emoji, "user_id": actorID, "count": count})
}

// event is pin.added or pin.removed for this pin; seq is the message's channel_seq.
func (p Pin) event(typ, actorID string, seq *int64) EventInput {
	return EventInput{WorkspaceID: p.WorkspaceID, Type: typ, ChannelID: p.ChannelID, MessageID: p.MessageID,
		Seq: seq, ActorID: actorID, Payload: map[string]any{"channel_id": p.ChannelID, "message_id": p.MessageID,
			"pinned_by": p.PinnedBy}}
}

// channelEvent is the event of a channel mutation: the channel as the API shows it, and, as the
// spec asks of channel.updated, the resulting archived flag.
func channelEvent(typ string, c Channel, actorID string) EventInput {
	return EventInput{WorkspaceID: c.WorkspaceID, Type: typ, ChannelID: c.ID, ActorID: actorID,
		Payload: map[string]any{"channel_id": c.ID, "channel": c, "archived": c.Archived}}
}

// workspaceEvent is workspace.updated or workspace.ownership_transferred: the workspace, plus
// what more the type says.
func workspaceEvent(typ string, w Workspace, actorID string, more map[string]any) EventInput {
	payload := map[string]any{"workspace_id": w.ID, "workspace": w}
	for k, v := range more {
		payload[k] = v
	}
	return EventInput{WorkspaceID: w.ID, Type: typ, ActorID: actorID, Payload: payload}
}

// memberModerationEvent is member.moderation_updated: the member's public moderation state
// (the note stays with moderators).
func memberModerationEvent(workspaceID, actorID string, member ModeratedMember) EventInput {
	member.ModerationNote = ""
	return EventInput{WorkspaceID: workspaceID, Type: "member.moderation_updated", ActorID: actorID,
		Payload: map[string]any{"user_id": member.User.ID, "member": member}}
}

// memberRemovedEvent is member.removed: who left (user_id) and what left with them.
func memberRemovedEvent(actorID string, removed MemberRemoved) EventInput {
	return EventInput{WorkspaceID: removed.WorkspaceID, Type: "member.removed", ActorID: actorID,
		Payload: map[string]any{"user_id": removed.UserID, "member": removed}}
}

// placePayload adds a place's channel_id or direct_conversation_id to payload.
func placePayload(p Place, payload map[string]any) map[string]any {
	if p.ChannelID != "" {
		payload["channel_id"] = p.ChannelID
	}
	if p.DMID != "" {
		payload["direct_conversation_id"] = p.DMID
	}
	return payload
}
