package persist

import (
	"context"
	"strings"
	"unicode/utf8"
)

// MaxEmojiLength bounds a reaction's emoji, in Unicode characters.
const MaxEmojiLength = 64

// ReactionSummary is one emoji on a message as a viewer sees it.
type ReactionSummary struct {
	Emoji       string `json:"emoji"`
	Count       int64  `json:"count"`
	ReactedByMe bool   `json:"reacted_by_me"`
}

// ReactionChange is the outcome of a reaction add or remove: the message's complete summaries
// for the actor, and the event, zero when nothing changed (a repeated add, an absent remove).
type ReactionChange struct {
	MessageID string
	Reactions []ReactionSummary
	Event     Event
}

// EachEvent hands over the change's event, if any.
func (c *ReactionChange) EachEvent(place func(*Event)) {
	if c.Changed() {
		place(&c.Event)
	}
}

// Changed reports whether the mutation changed anything (and appended an event).
func (c ReactionChange) Changed() bool { return c.Event.ID != "" }

// reactionsHydrate fills the reaction summaries of msgs for viewer userID, in one query.
func (tx *Tx) reactionsHydrate(ctx context.Context, userID string, msgs []Message) error {
	if len(msgs) == 0 {
		return nil
	}
	ids, at := messageIndex(msgs)
	for i := range msgs {
		msgs[i].Reactions = []ReactionSummary{}
	}
	rows, err := tx.query(ctx, `SELECT rc.message_id, rc.emoji, rc.count,
			EXISTS (SELECT 1 FROM reactions r WHERE r.message_id = rc.message_id AND r.emoji = rc.emoji AND r.user_id = $3)
		FROM reaction_counts rc WHERE rc.workspace_id = $1 AND rc.message_id = ANY($2)
		ORDER BY rc.message_id, rc.created_at, rc.emoji`, msgs[0].WorkspaceID, ids, userID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var s ReactionSummary
		if err := rows.Scan(&id, &s.Emoji, &s.Count, &s.ReactedByMe); err != nil {
			return err
		}
		i := at[id]
		msgs[i].Reactions = append(msgs[i].Reactions, s)
	}
	return rows.Err()
}

// validateEmoji accepts any non-empty string of at most MaxEmojiLength characters without NUL;
// emoji are stored and compared byte for byte. Codes: invalid_request.
func validateEmoji(emoji string) error {
	if emoji == "" || strings.ContainsRune(emoji, 0) || utf8.RuneCountInString(emoji) > MaxEmojiLength {
		return Invalid("emoji must be 1 to %d characters", MaxEmojiLength)
	}
	return nil
}

// ReactionAdd adds the actor's emoji reaction to a message and appends reaction.added with the
// total after this add. A repeated add changes nothing and appends no event. The per-emoji
// counter row is locked to commit, so concurrent adds each see an exact total. Codes:
// invalid_request, not_found, forbidden (guards), message_deleted.
func (tx *Tx) ReactionAdd(ctx context.Context, actor Actor, messageID, emoji string) (ReactionChange, error) {
	if err := validateEmoji(emoji); err != nil {
		return ReactionChange{}, err
	}
	// FOR SHARE: a concurrent delete waits for this reaction, then removes it with the rest.
	m, _, err := tx.messageFor(ctx, actor, messageID, accessChange, "FOR SHARE OF m")
	if err != nil {
		return ReactionChange{}, err
	}
	if m.DeletedAt != nil {
		return ReactionChange{}, Errorf(CodeMessageDeleted, "that message was deleted")
	}
	tag, err := tx.exec(ctx, `INSERT INTO reactions (message_id, emoji, user_id, workspace_id, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, m.ID, emoji, actor.UserID, m.WorkspaceID, tx.now)
	if err != nil {
		return ReactionChange{}, err
	}
	if tag.RowsAffected() == 0 {
		return tx.reactionChange(ctx, actor, m, nil)
	}
	var count int64
	if err := tx.queryRow(ctx, `INSERT INTO reaction_counts AS rc (message_id, emoji, workspace_id, count, created_at)
		VALUES ($1, $2, $3, 1, $4)
		ON CONFLICT (message_id, emoji) DO UPDATE SET count = rc.count + 1
		RETURNING count`, m.ID, emoji, m.WorkspaceID, tx.now).Scan(&count); err != nil {
		return ReactionChange{}, err
	}
	return tx.reactionChange(ctx, actor, m, &reactionEvent{"reaction.added", emoji, count})
}

// ReactionRemove removes the actor's emoji reaction and appends reaction.removed with the total
// after this removal. Removing an absent reaction changes nothing and appends no event.
// Codes: invalid_request, not_found, forbidden (guards).
func (tx *Tx) ReactionRemove(ctx context.Context, actor Actor, messageID, emoji string) (ReactionChange, error) {
	if err := validateEmoji(emoji); err != nil {
		return ReactionChange{}, err
	}
	m, _, err := tx.messageFor(ctx, actor, messageID, accessChange, "FOR SHARE OF m")
	if err != nil {
		return ReactionChange{}, err
	}
	tag, err := tx.exec(ctx, `DELETE FROM reactions WHERE workspace_id = $1 AND message_id = $2 AND emoji = $3 AND user_id = $4`,
		m.WorkspaceID, m.ID, emoji, actor.UserID)
	if err != nil {
		return ReactionChange{}, err
	}
	if tag.RowsAffected() == 0 {
		return tx.reactionChange(ctx, actor, m, nil)
	}
	var count int64
	if err := tx.queryRow(ctx, `UPDATE reaction_counts SET count = count - 1
		WHERE workspace_id = $1 AND message_id = $2 AND emoji = $3 RETURNING count`,
		m.WorkspaceID, m.ID, emoji).Scan(&count); err != nil {
		return ReactionChange{}, err
	}
	if count == 0 {
		// The update holds the row lock, so no add can slip in between.
		if _, err := tx.exec(ctx, `DELETE FROM reaction_counts WHERE workspace_id = $1 AND message_id = $2 AND emoji = $3`,
			m.WorkspaceID, m.ID, emoji); err != nil {
			return ReactionChange{}, err
		}
	}
	return tx.reactionChange(ctx, actor, m, &reactionEvent{"reaction.removed", emoji, count})
}

type reactionEvent struct {
	typ   string
	emoji string
	count int64
}

// reactionChange reads the message's summaries for the actor and, when ev is set, appends the
// event as the transaction's last write.
func (tx *Tx) reactionChange(ctx context.Context, actor Actor, m Message, ev *reactionEvent) (ReactionChange, error) {
	m, err := tx.messageHydrate(ctx, actor, m)
	if err != nil {
		return ReactionChange{}, err
	}
	out := ReactionChange{MessageID: m.ID, Reactions: m.Reactions}
	if ev == nil {
		return out, nil
	}
	out.Event, err = tx.EventAppend(ctx, m.reactionEvent(ev.typ, actor.UserID, ev.emoji, ev.count))
	return out, err
}
