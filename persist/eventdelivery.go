package persist

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Delivery attempt pages (§Limits).
const (
	DeliveryPageDefault = 50
	DeliveryPageMax     = 200
)

// EventDeliveryAttempt is one delivery of an event to a subscription. Failed deliveries are not
// retried, so Attempt is 1 for every event delivered once.
type EventDeliveryAttempt struct {
	ID             string    `json:"id"`
	SubscriptionID string    `json:"subscription_id"`
	EventID        string    `json:"event_id"`
	WorkspaceID    string    `json:"workspace_id"`
	EventType      string    `json:"event_type"`
	Attempt        int       `json:"attempt"`
	ResponseStatus int       `json:"response_status"`
	ResponseBody   string    `json:"response_body,omitempty"`
	Error          string    `json:"error,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	CompletedAt    time.Time `json:"completed_at"`
}

// DeliveryPage is one page of a subscription's attempts, newest first. NextCursor is the id to
// pass as before for the next page, nil on the last page.
type DeliveryPage struct {
	Deliveries []EventDeliveryAttempt `json:"deliveries"`
	NextCursor *string                `json:"next_cursor"`
}

// EventDeliveryList returns a page of a subscription's delivery attempts, newest first, strictly
// older than the attempt before names. Human members other than waiting-room guests may list.
// Codes: not_found, forbidden, invalid_request (limit out of range; before names no retained
// attempt of this subscription, as when retention removed it).
func (tx *Tx) EventDeliveryList(ctx context.Context, actor Actor, subscriptionID, before string, limit int) (DeliveryPage, error) {
	if err := requireHumanIntegrationActor(actor); err != nil {
		return DeliveryPage{}, err
	}
	var workspaceID string
	if err := tx.queryRow(ctx, `SELECT workspace_id FROM event_subscriptions WHERE id = $1`, subscriptionID).Scan(&workspaceID); err != nil {
		return DeliveryPage{}, notFoundAs(err, "event subscription")
	}
	if _, err := tx.requireIntegrationViewer(ctx, actor, workspaceID); err != nil {
		return DeliveryPage{}, err
	}
	if limit < 1 {
		return DeliveryPage{}, Invalid("limit must be 1 to %d", DeliveryPageMax)
	}
	limit = min(limit, DeliveryPageMax) // above the maximum is the maximum
	var below int64 = 1<<63 - 1
	if before != "" {
		err := tx.queryRow(ctx, `SELECT seq FROM event_delivery_attempts WHERE subscription_id = $1 AND id = $2`,
			subscriptionID, before).Scan(&below)
		if e := notFoundAs(err, "attempt"); e != err {
			return DeliveryPage{}, Invalid("before names no retained delivery attempt of this subscription (retention may have removed it); start again from the newest page")
		} else if err != nil {
			return DeliveryPage{}, err
		}
	}
	rows, err := tx.query(ctx, `SELECT id, subscription_id, event_id, workspace_id, event_type, attempt,
			coalesce(response_status, 0), coalesce(response_body, ''), coalesce(error, ''), created_at, completed_at
		FROM event_delivery_attempts WHERE subscription_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`,
		subscriptionID, below, limit+1)
	if err != nil {
		return DeliveryPage{}, err
	}
	defer rows.Close()
	page := DeliveryPage{Deliveries: []EventDeliveryAttempt{}}
	for rows.Next() {
		var a EventDeliveryAttempt
		if err := rows.Scan(&a.ID, &a.SubscriptionID, &a.EventID, &a.WorkspaceID, &a.EventType, &a.Attempt,
			&a.ResponseStatus, &a.ResponseBody, &a.Error, &a.CreatedAt, &a.CompletedAt); err != nil {
			return DeliveryPage{}, err
		}
		page.Deliveries = append(page.Deliveries, a)
	}
	if err := rows.Err(); err != nil {
		return DeliveryPage{}, err
	}
	if len(page.Deliveries) > limit {
		page.Deliveries = page.Deliveries[:limit]
		next := page.Deliveries[limit-1].ID
		page.NextCursor = &next
	}
	return page, nil
}

// SubscriptionConsumer is what the deliverer needs to run (or remove) a subscription's
// JetStream consumer.
type SubscriptionConsumer struct {
	ID          string
	WorkspaceID string
	// Resume is the last cursor handled: the consumer starts after it.
	Resume int64
	Active bool
	// EventTypes are the types subscribed to ("*": all); they never change after creation, so
	// the consumer may filter by them.
	EventTypes []string
}

// SubscriptionConsumers lists the subscriptions whose consumers should run (active ones) and
// those whose consumers should go (revoked, not yet recorded as removed).
func (tx *Tx) SubscriptionConsumers(ctx context.Context) ([]SubscriptionConsumer, error) {
	rows, err := tx.query(ctx, `SELECT id, workspace_id, delivered_cursor, revoked_at IS NULL, event_types FROM event_subscriptions
		WHERE revoked_at IS NULL OR consumer_removed_at IS NULL ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SubscriptionConsumer
	for rows.Next() {
		var c SubscriptionConsumer
		if err := rows.Scan(&c.ID, &c.WorkspaceID, &c.Resume, &c.Active, &c.EventTypes); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// SubscriptionConsumerRemoved records that a revoked subscription's consumer is gone.
func (tx *Tx) SubscriptionConsumerRemoved(ctx context.Context, id string) error {
	_, err := tx.exec(ctx, `UPDATE event_subscriptions SET consumer_removed_at = $2 WHERE id = $1 AND revoked_at IS NOT NULL`, id, tx.now)
	return err
}

// DeliveryTarget is where one event goes.
type DeliveryTarget struct {
	SubscriptionID string
	WorkspaceID    string
	CallbackURL    string
	SigningSecret  string
}

// EventDeliveryPlan decides whether the event at cursor (of the subscription's workspace, with
// its scope and type, read from the stream subject) is delivered: the subscription is active,
// the cursor is past the last one handled, the type is subscribed, and the subscription's bot,
// still a member, may see it (the visibility rule). An event that is not delivered is marked
// handled at once. ok is false when nothing is to be sent.
func (tx *Tx) EventDeliveryPlan(ctx context.Context, subscriptionID string, cursor int64, scope EventScope, eventType string) (DeliveryTarget, bool, error) {
	var t DeliveryTarget
	var botID string
	var types []string
	var delivered int64
	err := tx.queryRow(ctx, `SELECT s.id, s.workspace_id, s.callback_url, s.signing_secret, s.bot_user_id, s.event_types,
			s.delivered_cursor
		FROM event_subscriptions s WHERE s.id = $1 AND s.revoked_at IS NULL FOR UPDATE`, subscriptionID).
		Scan(&t.SubscriptionID, &t.WorkspaceID, &t.CallbackURL, &t.SigningSecret, &botID, &types, &delivered)
	if e := notFoundAs(err, "subscription"); e != err {
		return DeliveryTarget{}, false, nil // revoked or gone: its consumer is about to be removed
	} else if err != nil {
		return DeliveryTarget{}, false, err
	}
	if cursor <= delivered {
		return DeliveryTarget{}, false, nil
	}
	deliver := slices.Contains(types, AllEventTypes) || slices.Contains(types, eventType)
	if deliver {
		// The bot reads as its socket would: the one membership guard, so a user bot whose owner
		// left or became a guest sees no more than the owner.
		var owner string
		if err := tx.queryRow(ctx, `SELECT coalesce(owner_user_id, '') FROM users WHERE id = $1`, botID).Scan(&owner); err != nil {
			return DeliveryTarget{}, false, err
		}
		v, err := tx.ViewerFor(ctx, Actor{UserID: botID, Kind: KindBot, OwnerUserID: owner}, t.WorkspaceID)
		if _, refused := ErrorOf(err); refused {
			deliver = false
		} else if err != nil {
			return DeliveryTarget{}, false, err
		}
		if deliver {
			var dms, channels []string
			if scope.DirectConversationID != "" {
				dms = []string{scope.DirectConversationID}
			}
			if scope.ChannelID != "" {
				channels = []string{scope.ChannelID}
			}
			facts, err := tx.VisibilityFactsFor(ctx, t.WorkspaceID, dms, channels)
			if err != nil {
				return DeliveryTarget{}, false, err
			}
			deliver = facts.Visible(v, scope)
		}
	}
	if !deliver {
		_, err := tx.exec(ctx, `UPDATE event_subscriptions SET delivered_cursor = $2 WHERE id = $1`, subscriptionID, cursor)
		return DeliveryTarget{}, false, err
	}
	return t, true, nil
}

// DeliveryOutcome is what one delivery produced (Status 0 when the callback never answered).
type DeliveryOutcome struct {
	EventID   string
	Cursor    int64
	EventType string
	Status    int
	Body      string
	Error     string
	StartedAt time.Time
}

// EventDeliveryRecord stores a delivery attempt and marks its cursor handled.
func (tx *Tx) EventDeliveryRecord(ctx context.Context, t DeliveryTarget, o DeliveryOutcome) (EventDeliveryAttempt, error) {
	a := EventDeliveryAttempt{ID: NewID(PrefixDeliveryAttempt, tx.now), SubscriptionID: t.SubscriptionID, EventID: o.EventID,
		WorkspaceID: t.WorkspaceID, EventType: o.EventType, Attempt: 1, ResponseStatus: o.Status,
		ResponseBody: cleanText(o.Body), Error: cleanText(o.Error), CreatedAt: o.StartedAt, CompletedAt: tx.now}
	if _, err := tx.exec(ctx, `INSERT INTO event_delivery_attempts (id, workspace_id, subscription_id, event_id, event_cursor,
			event_type, attempt, request_json, response_status, response_body, error, created_at, completed_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, '', nullif($8, 0), $9, nullif($10, ''), $11, $12)`,
		a.ID, a.WorkspaceID, a.SubscriptionID, a.EventID, o.Cursor, a.EventType, a.Attempt, a.ResponseStatus,
		a.ResponseBody, a.Error, a.CreatedAt, a.CompletedAt); err != nil {
		return EventDeliveryAttempt{}, err
	}
	_, err := tx.exec(ctx, `UPDATE event_subscriptions SET delivered_cursor = greatest(delivered_cursor, $2) WHERE id = $1`,
		t.SubscriptionID, o.Cursor)
	return a, err
}

// cleanText makes text from the outside storable: valid UTF-8 without NUL.
func cleanText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}
