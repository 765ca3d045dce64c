package persist

import (
	"context"
	"strings"
	"unicode/utf8"
)

// MaxEmojiLength bounds a reaction's emoji, in Unicode characters.
const MaxEmojiLength = 64

// Reaction limits (issue 22): numbers a real team never meets, which keep a message's summaries
// (carried by every page that holds it) small. Without them one member put 10,000 distinct
// emoji on one message: 1.1 MB on every page holding it.
const (
	// MaxReactionEmoji is how many distinct emoji one message may carry.
	MaxReactionEmoji = 50
	// MaxReactionsPerPerson is how many reactions one person (or bot) may put on one message.
	MaxReactionsPerPerson = 20
)

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

// validateEmoji accepts any non-empty string of at most MaxEmojiLength characters of valid UTF-8
// without NUL; emoji are stored and compared byte for byte. Codes: invalid_request.
func validateEmoji(emoji string) error {
	if emoji == "" || !utf8.ValidString(emoji) || strings.ContainsRune(emoji, 0) || utf8.RuneCountInString(emoji) > MaxEmojiLength {
		return Invalid("emoji must be 1 to %d characters", MaxEmojiLength)
	}
	return nil
}

// ReactionAdd adds the actor's emoji reaction to a message and appends reaction.added with the
// total after this add. A repeated add changes nothing and appends no event. The per-emoji
// counter row is locked to commit, so concurrent adds each see an exact total. Codes:
// invalid_request, not_found, forbidden (guards), message_deleted, too_many_reactions
// (reactionLimits).
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
	if err := tx.reactionLimits(ctx, m, emoji, actor.UserID); err != nil {
		return ReactionChange{}, err
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

// reactionLimits refuses a new reaction (already inserted by this transaction, which the refusal
// rolls back) past MaxReactionEmoji or MaxReactionsPerPerson. Adds that pass the insert queue
// on a per-message lock to commit before counting, so each counts every add committed before it
// and two racing adds cannot both take the last place; repeated adds and removals never wait.
// Codes: too_many_reactions.
func (tx *Tx) reactionLimits(ctx context.Context, m Message, emoji, userID string) error {
	if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('reactions:' || $1::text, 0))`, m.ID); err != nil {
		return err
	}
	var distinct, mine int
	var known bool
	if err := tx.queryRow(ctx, `SELECT
			(SELECT count(*) FROM reaction_counts WHERE workspace_id = $1 AND message_id = $2),
			EXISTS (SELECT 1 FROM reaction_counts WHERE workspace_id = $1 AND message_id = $2 AND emoji = $3),
			(SELECT count(*) FROM reactions WHERE workspace_id = $1 AND message_id = $2 AND user_id = $4)`,
		m.WorkspaceID, m.ID, emoji, userID).Scan(&distinct, &known, &mine); err != nil {
		return err
	}
	if !known && distinct >= MaxReactionEmoji {
		return Errorf(CodeTooManyReactions, "a message carries at most %d different emoji; react with one already on it", MaxReactionEmoji)
	}
	if mine > MaxReactionsPerPerson {
		return Errorf(CodeTooManyReactions, "one person may add at most %d reactions to a message; remove one first", MaxReactionsPerPerson)
	}
	return nil
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
