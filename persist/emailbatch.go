package persist

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Missed-activity email batches (migration 0024): the email consumer queues each mention, direct
// message and reply in a followed thread into the recipient's open batch for the conversation;
// a sender claims batches that are due, re-checks them, sends one email each and records the
// outcome. See docs/notifications.md.

// EmailQueue adds a new message (a root or a thread reply) to the open batch of each person it
// should be emailed to, opening batches as needed, and returns how many people that is. The
// recipients are those who can read it (never its author, never bots), with email notifications
// on and a delay other than off, not having muted its channel, and for whom it is a direct
// message, a channel message mentioning their handle, or a reply in a thread they follow (they
// wrote its root or a reply in it) or mentioning them. A batch is due delays[their delay] after
// its first message was posted. A message already queued for a person is not queued again, so
// an event delivered twice adds nothing. Codes: not_found (message).
func (tx *Tx) EmailQueue(ctx context.Context, workspaceID, messageID string, delays map[string]time.Duration) (int, error) {
	m, err := tx.messageLoad(ctx, messageID, "")
	if err != nil {
		return 0, err
	}
	if m.WorkspaceID != workspaceID {
		return 0, NotFound("message")
	}
	if m.DeletedAt != nil {
		return 0, nil
	}
	readers, err := tx.emailReaders(ctx, m, "")
	if err != nil {
		return 0, err
	}
	followers, err := tx.threadFollowers(ctx, m)
	if err != nil {
		return 0, err
	}
	place, thread := m.ChannelID+m.DirectConversationID, ""
	if !m.IsRoot() {
		thread = m.ThreadRootID
	}
	queued := 0
	for _, r := range readers {
		if !emailSelects(m, r.handle, followers[r.userID]) {
			continue
		}
		delay, ok := delays[r.delay]
		if !ok {
			continue
		}
		var seen bool
		if err := tx.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM email_batch_messages WHERE user_id = $1 AND message_id = $2)`,
			r.userID, m.ID).Scan(&seen); err != nil || seen {
			if err != nil {
				return 0, err
			}
			continue
		}
		due := m.CreatedAt.Add(delay)
		var batchID string
		// The open batch takes the message; a batch a sender closed meanwhile is no longer
		// open, so the message opens a new one.
		if err := tx.queryRow(ctx, `INSERT INTO email_batches AS b (id, user_id, workspace_id, place_id, thread_root_id, created_at, due_at, next_attempt_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
			ON CONFLICT (user_id, place_id, thread_root_id) WHERE state = 'open'
				DO UPDATE SET due_at = LEAST(b.due_at, EXCLUDED.due_at), next_attempt_at = LEAST(b.due_at, EXCLUDED.due_at)
			RETURNING id`, NewID("emb_", tx.now), r.userID, workspaceID, place, thread, tx.now, due).Scan(&batchID); err != nil {
			return 0, err
		}
		if _, err := tx.exec(ctx, `INSERT INTO email_batch_messages (batch_id, user_id, message_id) VALUES ($1, $2, $3)
			ON CONFLICT DO NOTHING`, batchID, r.userID, m.ID); err != nil {
			return 0, err
		}
		queued++
	}
	return queued, nil
}

// emailSelects is the rule of missed-activity email for one reader of m: a direct message
// always; a channel root when it mentions them; a reply when it mentions them or they follow its
// thread. Mentions are Addresses' for an offline reader: @handle, @channel and @everyone; @here
// addresses those present, whom missed-activity email is not for.
func emailSelects(m Message, handle string, follows bool) bool {
	switch {
	case m.DirectConversationID != "" && m.IsRoot():
		return true
	case m.IsRoot():
		return Addresses(m.Body, handle, false)
	default:
		return follows || m.DirectConversationID != "" || Addresses(m.Body, handle, false)
	}
}

// emailReader is a person who can read a message's place and wants missed-activity email.
type emailReader struct {
	userID, handle, delay, email string
}

// emailReaders lists who can read m's place (pushReaders' rules: members, a guest only in the
// guest channel, a private channel's members only), the author aside, who have an email, email
// notifications on with a delay other than off, and have neither muted nor left the channel. With userID,
// only that user is looked at.
func (tx *Reader) emailReaders(ctx context.Context, m Message, userID string) ([]emailReader, error) {
	const wants = `u.kind = 'human' AND u.deleted_at IS NULL AND u.email IS NOT NULL AND u.email_notifications
		AND u.email_delay <> 'off' AND ($4::text = '' OR wm.user_id = $4)`
	var rows pgx.Rows
	var err error
	if m.ChannelID != "" {
		rows, err = tx.query(ctx, `SELECT wm.user_id, coalesce(u.handle, ''), u.email_delay, u.email
			FROM workspace_members wm JOIN users u ON u.id = wm.user_id
			JOIN channels c ON c.id = $2 AND c.workspace_id = wm.workspace_id
			LEFT JOIN channel_notification_preferences p ON p.workspace_id = wm.workspace_id
				AND p.channel_id = c.id AND p.user_id = wm.user_id
			WHERE wm.workspace_id = $1 AND wm.user_id <> $3 AND coalesce(p.level, '') <> 'muted'
				AND (wm.role <> 'guest' OR c.name = $5) AND NOT `+channelHidden("c.id", "wm.user_id")+`
				AND NOT `+channelLeft("c", "wm.user_id")+` AND `+wants,
			m.WorkspaceID, m.ChannelID, m.AuthorID, userID, GuestChannel)
	} else {
		rows, err = tx.query(ctx, `SELECT wm.user_id, coalesce(u.handle, ''), u.email_delay, u.email
			FROM dm_members dmm JOIN workspace_members wm ON wm.workspace_id = dmm.workspace_id AND wm.user_id = dmm.user_id
			JOIN users u ON u.id = wm.user_id
			WHERE dmm.workspace_id = $1 AND dmm.dm_id = $2 AND wm.user_id <> $3 AND `+wants,
			m.WorkspaceID, m.DirectConversationID, m.AuthorID, userID)
	}
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (emailReader, error) {
		var r emailReader
		err := row.Scan(&r.userID, &r.handle, &r.delay, &r.email)
		return r, err
	})
}

// threadFollowers are the people who follow a reply's thread: the authors of its root and of its
// replies. A root has none.
func (tx *Reader) threadFollowers(ctx context.Context, m Message) (map[string]bool, error) {
	out := map[string]bool{}
	if m.IsRoot() {
		return out, nil
	}
	rows, err := tx.query(ctx, `SELECT DISTINCT author_id FROM messages WHERE workspace_id = $1 AND thread_root_id = $2 AND id <> $3`,
		m.WorkspaceID, m.ThreadRootID, m.ID)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	for _, id := range ids {
		out[id] = true
	}
	return out, err
}

// EmailBatch is a batch a sender claimed. Attempt fences the claim: the outcome is recorded only
// while no later claim took the batch.
type EmailBatch struct {
	ID           string
	UserID       string
	WorkspaceID  string
	PlaceID      string
	ThreadRootID string
	Attempt      int
}

// EmailClaim claims up to limit batches to send now: open ones that are due, and closed ones
// whose retry time has come or whose sender's claim lapsed (it died). Each is closed (its
// messages are fixed; a new message opens a new batch) and held until lease from now. Replicas
// claim disjoint batches.
func (tx *Tx) EmailClaim(ctx context.Context, lease time.Duration, limit int) ([]EmailBatch, error) {
	rows, err := tx.query(ctx, `UPDATE email_batches SET state = 'closed', claimed_until = $1::timestamptz + $2::bigint * interval '1 microsecond',
			attempts = attempts + 1
		WHERE id IN (SELECT id FROM email_batches
			WHERE (state = 'open' AND due_at <= $1)
				OR (state = 'closed' AND next_attempt_at <= $1 AND (claimed_until IS NULL OR claimed_until <= $1))
			ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING id, user_id, workspace_id, place_id, thread_root_id, attempts`, tx.now, lease.Microseconds(), limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (EmailBatch, error) {
		var b EmailBatch
		err := row.Scan(&b.ID, &b.UserID, &b.WorkspaceID, &b.PlaceID, &b.ThreadRootID, &b.Attempt)
		return b, err
	})
}

// EmailNextDue is when the next open batch falls due (zero when there is none), so that a
// sender can sleep until then.
func (tx *Reader) EmailNextDue(ctx context.Context) (time.Time, error) {
	var due *time.Time
	err := tx.queryRow(ctx, `SELECT min(due_at) FROM email_batches WHERE state = 'open'`).Scan(&due)
	if err != nil || due == nil {
		return time.Time{}, err
	}
	return *due, nil
}

// Outcomes of a claimed batch.
const (
	EmailSent      = "sent"
	EmailCancelled = "cancelled"
	EmailFailed    = "failed"
)

// EmailFinish records a claimed batch's final outcome (EmailSent, EmailCancelled, EmailFailed
// with its error). It reports false when the claim had lapsed and another sender took the batch.
func (tx *Tx) EmailFinish(ctx context.Context, b EmailBatch, outcome, lastError string) (bool, error) {
	tag, err := tx.exec(ctx, `UPDATE email_batches SET state = $3, finished_at = $4, claimed_until = NULL, last_error = nullif($5, '')
		WHERE id = $1 AND attempts = $2 AND state = 'closed'`, b.ID, b.Attempt, outcome, tx.now, lastError)
	return tag.RowsAffected() == 1, err
}

// EmailRetry releases a claimed batch to be tried again at next, after a temporary failure.
func (tx *Tx) EmailRetry(ctx context.Context, b EmailBatch, next time.Time, lastError string) error {
	_, err := tx.exec(ctx, `UPDATE email_batches SET next_attempt_at = $3, claimed_until = NULL, last_error = $4
		WHERE id = $1 AND attempts = $2 AND state = 'closed'`, b.ID, b.Attempt, next, lastError)
	return err
}

// EmailUnsubscribe turns email notifications off for the person an email with this one-click
// unsubscribe token was sent to, and returns their address. It needs no session: the token is
// the proof. Codes: not_found (unknown token).
func (tx *Tx) EmailUnsubscribe(ctx context.Context, token string) (string, error) {
	var address string
	err := tx.queryRow(ctx, `UPDATE users u SET email_notifications = false, updated_at = $2
		FROM email_batches b WHERE b.unsubscribe_hash = $1 AND u.id = b.user_id
		RETURNING coalesce(u.email, '')`, HashSecret(token), tx.now).Scan(&address)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", NotFound("unsubscribe link")
	}
	return address, err
}

// EmailBatchesPrune deletes finished batches older than before and returns how many went; their
// unsubscribe links stop working with them.
func (tx *Tx) EmailBatchesPrune(ctx context.Context, before time.Time) (int64, error) {
	tag, err := tx.exec(ctx, `DELETE FROM email_batches WHERE finished_at < $1`, before)
	return tag.RowsAffected(), err
}
