package persist

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// EventSubscription sends a workspace's durable events of the chosen types, as its
// installation's bot may see them, to a callback URL. SigningSecret is set only in the result
// that created or rotated it; lists never carry it.
type EventSubscription struct {
	ID                string     `json:"id"`
	WorkspaceID       string     `json:"workspace_id"`
	AppInstallationID string     `json:"app_installation_id"`
	BotUserID         string     `json:"bot_user_id"`
	EventTypes        []string   `json:"event_types"`
	CallbackURL       string     `json:"callback_url"`
	SigningSecret     string     `json:"signing_secret,omitempty"`
	CreatedBy         string     `json:"created_by"`
	CreatedAt         time.Time  `json:"created_at"`
	RevokedAt         *time.Time `json:"revoked_at,omitempty"`
}

const eventSubscriptionColumns = `id, workspace_id, app_installation_id, bot_user_id, event_types, callback_url,
	created_by, created_at, revoked_at`

func scanEventSubscription(row pgx.Row) (EventSubscription, error) {
	var s EventSubscription
	err := row.Scan(&s.ID, &s.WorkspaceID, &s.AppInstallationID, &s.BotUserID, &s.EventTypes, &s.CallbackURL,
		&s.CreatedBy, &s.CreatedAt, &s.RevokedAt)
	return s, err
}

// EventSubscriptionCreateParams are the fields of a new subscription.
type EventSubscriptionCreateParams struct {
	AppInstallationID string   // required: an active installation of the workspace, whose bot's view applies
	EventTypes        []string // exact durable event types, or "*"
	CallbackURL       string
}

// normalizeEventTypes checks a subscription's types: at least one, each a durable type of
// EventTypes or AllEventTypes; repeats are dropped. Codes: invalid_request.
func normalizeEventTypes(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, Invalid("event_types must name at least one event type (or \"*\")")
	}
	out := make([]string, 0, len(in))
	for _, t := range in {
		if t != AllEventTypes && !slices.Contains(EventTypes, t) {
			return nil, Invalid("unknown event type %q; GET /api/event-types lists them", t)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// EventSubscriptionCreate subscribes a callback to workspaceID's events after the current end of
// the log, with a fresh signing secret returned once. A human owner or moderator creates it.
// Codes: invalid_request (unknown event type, bad URL, no active installation), not_found
// (workspace), forbidden.
func (tx *Tx) EventSubscriptionCreate(ctx context.Context, actor Actor, workspaceID string, p EventSubscriptionCreateParams) (EventSubscription, error) {
	if _, err := tx.requireIntegrationManager(ctx, actor, workspaceID); err != nil {
		return EventSubscription{}, err
	}
	types, err := normalizeEventTypes(p.EventTypes)
	if err != nil {
		return EventSubscription{}, err
	}
	callback, err := validateCallbackURL(p.CallbackURL)
	if err != nil {
		return EventSubscription{}, err
	}
	if p.AppInstallationID == "" {
		return EventSubscription{}, Invalid("app_installation_id is required: deliveries follow what the installation's bot may see")
	}
	inst, err := tx.activeInstallation(ctx, workspaceID, p.AppInstallationID)
	if err != nil {
		return EventSubscription{}, err
	}
	if err := tx.requireWorkspaceBot(ctx, workspaceID, inst.BotUserID); err != nil {
		return EventSubscription{}, err
	}
	var head int64
	if err := tx.queryRow(ctx, `SELECT last_cursor FROM event_heads WHERE workspace_id = $1`, workspaceID).Scan(&head); err != nil {
		return EventSubscription{}, notFoundAs(err, "workspace")
	}
	secret := newSigningSecret()
	s, err := scanEventSubscription(tx.queryRow(ctx, `INSERT INTO event_subscriptions (id, workspace_id, app_installation_id,
			bot_user_id, event_types, callback_url, signing_secret, created_by, created_at, start_cursor, delivered_cursor)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) RETURNING `+eventSubscriptionColumns,
		NewID(PrefixEventSubscription, tx.now), workspaceID, inst.ID, inst.BotUserID, types, callback, secret,
		actor.UserID, tx.now, head))
	s.SigningSecret = secret
	return s, err
}

// EventSubscriptionList returns a workspace's active subscriptions, secrets redacted, oldest
// first. Human members other than waiting-room guests may list. Codes: not_found, forbidden.
func (tx *Tx) EventSubscriptionList(ctx context.Context, actor Actor, workspaceID string) ([]EventSubscription, error) {
	if _, err := tx.requireIntegrationViewer(ctx, actor, workspaceID); err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, `SELECT `+eventSubscriptionColumns+` FROM event_subscriptions
		WHERE workspace_id = $1 AND revoked_at IS NULL ORDER BY created_at, id`, workspaceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []EventSubscription{}
	for rows.Next() {
		s, err := scanEventSubscription(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func (tx *Tx) eventSubscriptionForManager(ctx context.Context, actor Actor, id string) (EventSubscription, error) {
	if err := requireHumanIntegrationActor(actor); err != nil {
		return EventSubscription{}, err
	}
	s, err := scanEventSubscription(tx.queryRow(ctx, `SELECT `+eventSubscriptionColumns+` FROM event_subscriptions
		WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return EventSubscription{}, notFoundAs(err, "event subscription")
	}
	_, err = tx.requireIntegrationManager(ctx, actor, s.WorkspaceID)
	return s, err
}

// EventSubscriptionRevoke revokes a subscription: nothing is delivered after the commit, and the
// deliverer removes its consumer. Revoking a revoked one returns it unchanged.
// Codes: not_found, forbidden.
func (tx *Tx) EventSubscriptionRevoke(ctx context.Context, actor Actor, id string) (EventSubscription, error) {
	s, err := tx.eventSubscriptionForManager(ctx, actor, id)
	if err != nil || s.RevokedAt != nil {
		return s, err
	}
	return scanEventSubscription(tx.queryRow(ctx, `UPDATE event_subscriptions SET revoked_at = $3
		WHERE workspace_id = $1 AND id = $2 RETURNING `+eventSubscriptionColumns, s.WorkspaceID, s.ID, tx.now))
}

// EventSubscriptionRotateSecret gives a subscription a fresh signing secret, returned once.
// Codes: not_found, forbidden, invalid_request (revoked).
func (tx *Tx) EventSubscriptionRotateSecret(ctx context.Context, actor Actor, id string) (EventSubscription, error) {
	s, err := tx.eventSubscriptionForManager(ctx, actor, id)
	if err != nil {
		return EventSubscription{}, err
	}
	if s.RevokedAt != nil {
		return EventSubscription{}, Invalid("this event subscription is revoked; its secret cannot be rotated")
	}
	secret := newSigningSecret()
	if _, err := tx.exec(ctx, `UPDATE event_subscriptions SET signing_secret = $3 WHERE workspace_id = $1 AND id = $2`,
		s.WorkspaceID, s.ID, secret); err != nil {
		return EventSubscription{}, err
	}
	s.SigningSecret = secret
	return s, nil
}
