package persist

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// PushoverSend is what a worker needs to send one Pushover notification that passed
// PushoverSendCheck: the person's user key, and the message body as it reads now.
type PushoverSend struct {
	UserKey string
	Body    string
}

// PushoverSendCheck re-checks a queued Pushover notification immediately before it is sent and
// returns what to send, or the reason (a PushDrop… constant) to drop it: the person still has
// Pushover enabled with a user key, their Pushover backoff has elapsed, and the message checks of
// web push pass (not deleted, still readable, still selected by the rules as they are now).
func (tx *Tx) PushoverSendCheck(ctx context.Context, userID, messageID string) (PushoverSend, string, error) {
	var enabled bool
	var key *string
	var backoff *time.Time
	err := tx.queryRow(ctx, `SELECT pushover_enabled, pushover_user_key, pushover_backoff_until
		FROM users WHERE id = $1 AND deleted_at IS NULL`, userID).Scan(&enabled, &key, &backoff)
	if errors.Is(err, pgx.ErrNoRows) { // the person's account was deleted
		return PushoverSend{}, PushDropNotReadable, nil
	}
	if err != nil {
		return PushoverSend{}, "", err
	}
	if !enabled || key == nil || *key == "" {
		return PushoverSend{}, PushDropPushoverOff, nil
	}
	if backoff != nil && backoff.After(tx.now) {
		return PushoverSend{}, PushDropBackoff, nil
	}
	body, reason, err := tx.pushMessageCheck(ctx, userID, messageID)
	if reason != "" || err != nil {
		return PushoverSend{}, reason, err
	}
	return PushoverSend{UserKey: *key, Body: body}, "", nil
}

// PushoverDelivered records a Pushover delivery to a person: their failure run and backoff end.
func (tx *Tx) PushoverDelivered(ctx context.Context, userID string) error {
	_, err := tx.exec(ctx, `UPDATE users SET pushover_failure_count = 0, pushover_backoff_until = NULL
		WHERE id = $1 AND pushover_failure_count > 0`, userID)
	return err
}

// PushoverFailed records a failed Pushover call for a person and backs their notifications off
// on the web push schedule (PushBackoff), at least retryAfter; it returns the backoff's end.
func (tx *Tx) PushoverFailed(ctx context.Context, userID string, retryAfter time.Duration) (time.Time, error) {
	var failures int
	if err := tx.queryRow(ctx, `SELECT pushover_failure_count FROM users WHERE id = $1 FOR UPDATE`, userID).Scan(&failures); err != nil {
		return time.Time{}, notFoundAs(err, "user")
	}
	until := tx.now.Add(PushBackoff(failures+1, retryAfter))
	_, err := tx.exec(ctx, `UPDATE users SET pushover_failure_count = pushover_failure_count + 1, pushover_backoff_until = $2
		WHERE id = $1`, userID, until)
	return until, err
}
