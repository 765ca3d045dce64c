package persist

import "context"

// MessageChanged is the outcome of an edit or a delete: the message as it now reads, and the
// events appended (none when nothing changed).
type MessageChanged struct {
	Message Message
	Events  []Event
}

// MessageUpdate replaces the body of the actor's own message and appends message.updated; the
// people it newly @mentions follow its thread (threadFollowEdit). The same body again changes
// nothing. Editing needs the place's change guard (not archived, not
// timed out or blocked). Codes: invalid_request, not_found, forbidden (not the author, guards),
// message_deleted.
func (tx *Tx) MessageUpdate(ctx context.Context, actor Actor, id, body string) (MessageChanged, error) {
	if err := validateBody(body); err != nil {
		return MessageChanged{}, err
	}
	m, _, err := tx.messageFor(ctx, actor, id, accessChange, "FOR UPDATE OF m")
	if err != nil {
		return MessageChanged{}, err
	}
	if m.AuthorID != actor.UserID {
		return MessageChanged{}, Forbidden("only the author can edit a message")
	}
	if m.DeletedAt != nil {
		return MessageChanged{}, Errorf(CodeMessageDeleted, "that message was deleted")
	}
	if m.Body != body {
		if _, err := tx.exec(ctx, `UPDATE messages SET body = $3, edited_at = $4 WHERE workspace_id = $1 AND id = $2`,
			m.WorkspaceID, m.ID, body, tx.now); err != nil {
			return MessageChanged{}, err
		}
		edited := m
		edited.Body = body
		if err := tx.threadFollowEdit(ctx, edited, m.Body); err != nil {
			return MessageChanged{}, err
		}
	}
	out, err := tx.MessageGet(ctx, actor, m.ID)
	if err != nil || m.Body == body {
		return MessageChanged{Message: out}, err
	}
	ev, err := tx.EventAppend(ctx, out.messageEvent("message.updated", actor, nil))
	return MessageChanged{Message: out, Events: []Event{ev}}, err
}

// MessageDelete turns a message into a tombstone and appends message.deleted. The author may
// delete their own messages, owners and moderators anyone's, wherever they can read it (archived
// channels included). The tombstone keeps its sequences and thread; its reactions go, its pin
// goes (pin.removed), its quote reference and attachments go (the uploads stay), and a deleted
// reply leaves its root's reply count (thread.state_updated). Deleting a tombstone changes
// nothing. Codes: not_found, forbidden.
func (tx *Tx) MessageDelete(ctx context.Context, actor Actor, id string) (MessageChanged, error) {
	m, member, err := tx.messageFor(ctx, actor, id, accessRead, "FOR UPDATE OF m")
	if err != nil {
		return MessageChanged{}, err
	}
	if m.AuthorID != actor.UserID && member.Role != RoleOwner && member.Role != RoleModerator {
		return MessageChanged{}, Forbidden("only the author, an owner or a moderator can delete a message")
	}
	if m.DeletedAt != nil {
		m, err := tx.messageHydrate(ctx, actor, m)
		return MessageChanged{Message: m}, err
	}
	if _, err := tx.exec(ctx, `UPDATE messages SET body = '', quoted_message_id = NULL, deleted_at = $3
		WHERE workspace_id = $1 AND id = $2`, m.WorkspaceID, m.ID, tx.now); err != nil {
		return MessageChanged{}, err
	}
	if m.IsRoot() {
		if err := tx.deletedRootsAdd(ctx, m.ChannelID, m.DirectConversationID, 1); err != nil {
			return MessageChanged{}, err
		}
	}
	if _, err := tx.exec(ctx, `DELETE FROM reactions WHERE workspace_id = $1 AND message_id = $2`, m.WorkspaceID, m.ID); err != nil {
		return MessageChanged{}, err
	}
	if _, err := tx.exec(ctx, `DELETE FROM reaction_counts WHERE workspace_id = $1 AND message_id = $2`, m.WorkspaceID, m.ID); err != nil {
		return MessageChanged{}, err
	}
	if _, err := tx.exec(ctx, `DELETE FROM message_attachments WHERE workspace_id = $1 AND message_id = $2`, m.WorkspaceID, m.ID); err != nil {
		return MessageChanged{}, err
	}
	pin, pinned, err := tx.pinDelete(ctx, m.WorkspaceID, m.ChannelID, m.ID)
	if err != nil {
		return MessageChanged{}, err
	}
	var ts ThreadState
	root := Message{ID: m.ThreadRootID, WorkspaceID: m.WorkspaceID, ChannelID: m.ChannelID,
		DirectConversationID: m.DirectConversationID}
	if !m.IsRoot() {
		ts = ThreadState{RootMessageID: m.ThreadRootID}
		if err := tx.queryRow(ctx, `UPDATE thread_states SET reply_count = reply_count - 1
			WHERE workspace_id = $1 AND root_message_id = $2
			RETURNING reply_count, last_reply_at, last_reply_author_ids,
				(SELECT channel_seq FROM messages WHERE workspace_id = $1 AND id = $2)`, m.WorkspaceID, m.ThreadRootID).Scan(
			&ts.ReplyCount, &ts.LastReplyAt, &ts.LastReplyAuthorIDs, &root.ChannelSeq); err != nil {
			return MessageChanged{}, err
		}
	}
	out, err := tx.MessageGet(ctx, actor, m.ID)
	if err != nil {
		return MessageChanged{}, err
	}
	var events []Event
	appendEvent := func(in EventInput) error {
		ev, err := tx.EventAppend(ctx, in)
		events = append(events, ev)
		return err
	}
	if err := appendEvent(out.messageEvent("message.deleted", actor, nil)); err != nil {
		return MessageChanged{}, err
	}
	if pinned {
		if err := appendEvent(pin.event("pin.removed", actor.UserID, m.ChannelSeq)); err != nil {
			return MessageChanged{}, err
		}
	}
	if !m.IsRoot() {
		if err := appendEvent(root.threadStateEvent(actor.UserID, ts)); err != nil {
			return MessageChanged{}, err
		}
	}
	return MessageChanged{Message: out, Events: events}, nil
}
