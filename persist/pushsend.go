package persist

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// PushMessage is what a push says about a message, read when the push is queued: the author's
// name and the channel's (empty for a direct conversation), and the route ids of the
// conversation (and of the thread, for a reply).
type PushMessage struct {
	WorkspaceID      string
	MessageID        string
	AuthorName       string
	ChannelName      string
	WorkspaceRouteID string
	PlaceRouteID     string
	ThreadRouteID    string // the root's route id, for replies
}

// PushTarget is one device a push goes to, or with Pushover set the person's Pushover account
// (DeviceID empty).
type PushTarget struct {
	UserID   string
	DeviceID string
	Pushover bool
}

// Why a queued push is dropped instead of sent (PushSendCheck).
const (
	PushDropDisabled       = "push_disabled"         // no current server key
	PushDropDeviceGone     = "device_not_registered" // the device is gone or now someone else's
	PushDropSessionEnded   = "session_ended"         // the registering session ended
	PushDropKeyRetired     = "key_retired"           // registered under a key that is not current
	PushDropBackoff        = "backoff"               // the device is backed off after a failure
	PushDropMessageDeleted = "message_deleted"       // the message was deleted
	PushDropNotReadable    = "not_readable"          // the recipient can no longer read it
	PushDropNotSelected    = "not_selected"          // the rules no longer select the recipient
	PushDropPushoverOff    = "pushover_off"          // the person turned Pushover off or cleared the key
)

// pushReader is a member who can read a place, with the level that applies to them there,
// whether they have Pushover set up (enabled, with a user key), and whether they are online in
// the workspace (an open socket on any replica: @here addresses them).
type pushReader struct {
	userID, handle, level string
	pushover, online      bool
}

// pushReaders lists who can read m's place, the author aside: members of the workspace (a guest
// only in the guest channel, and only its members for a private channel), and for a direct
// conversation its members; not those who left the channel (channelstate.go). With userID,
// only that user is looked at; without, only users with a registered device or Pushover set up.
func (tx *Reader) pushReaders(ctx context.Context, m Message, userID string) ([]pushReader, error) {
	const filter = `(CASE WHEN $4::text = '' THEN EXISTS (SELECT 1 FROM push_devices d WHERE d.user_id = wm.user_id)
			OR (u.pushover_enabled AND u.pushover_user_key IS NOT NULL)
		ELSE wm.user_id = $4 END)`
	const pushover = `(u.pushover_enabled AND u.pushover_user_key IS NOT NULL),
		EXISTS (SELECT 1 FROM presence_users pu WHERE pu.workspace_id = wm.workspace_id AND pu.user_id = wm.user_id)`
	var rows pgx.Rows
	var err error
	if m.ChannelID != "" {
		rows, err = tx.query(ctx, `SELECT wm.user_id, coalesce(u.handle, ''), coalesce(p.level, $5), `+pushover+`
			FROM workspace_members wm JOIN users u ON u.id = wm.user_id
			JOIN channels c ON c.id = $2 AND c.workspace_id = wm.workspace_id
			LEFT JOIN channel_notification_preferences p ON p.workspace_id = wm.workspace_id
				AND p.channel_id = c.id AND p.user_id = wm.user_id
			WHERE wm.workspace_id = $1 AND wm.user_id <> $3 AND u.kind = 'human' AND u.deleted_at IS NULL
				AND (wm.role <> 'guest' OR c.name = $6) AND NOT `+channelHidden("c.id", "wm.user_id")+`
				AND NOT `+channelLeft("c", "wm.user_id")+` AND `+filter,
			m.WorkspaceID, m.ChannelID, m.AuthorID, userID, DefaultChannelNotify, GuestChannel)
	} else {
		rows, err = tx.query(ctx, `SELECT wm.user_id, coalesce(u.handle, ''), $5::text, `+pushover+`
			FROM dm_members dmm JOIN workspace_members wm ON wm.workspace_id = dmm.workspace_id AND wm.user_id = dmm.user_id
			JOIN users u ON u.id = wm.user_id
			WHERE dmm.workspace_id = $1 AND dmm.dm_id = $2 AND wm.user_id <> $3 AND u.kind = 'human'
				AND u.deleted_at IS NULL AND `+filter,
			m.WorkspaceID, m.DirectConversationID, m.AuthorID, userID, NotifyAll)
	}
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (pushReader, error) {
		var r pushReader
		err := row.Scan(&r.userID, &r.handle, &r.level, &r.pushover, &r.online)
		return r, err
	})
}

// PushTargetsInWorkspace reports whether any member of the workspace could be pushed to: has a
// registered device or, with pushover, Pushover set up. When none could, no message of the
// workspace has a push recipient, and a batch of new messages is settled with this one query.
func (tx *Reader) PushTargetsInWorkspace(ctx context.Context, workspaceID string, pushover bool) (bool, error) {
	var found bool
	// Led by the devices (few), not by the members: one query per batch of posts read every
	// membership of a 20,000-member workspace with a probe each (300 ms under the generic plan,
	// which cannot drop the Pushover branch when $2 is false; docs/performance.md).
	err := tx.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM push_devices d
			JOIN workspace_members wm ON wm.workspace_id = $1 AND wm.user_id = d.user_id)
		OR ($2 AND EXISTS (SELECT 1 FROM workspace_members wm JOIN users u ON u.id = wm.user_id
			WHERE wm.workspace_id = $1 AND u.pushover_enabled AND u.pushover_user_key IS NOT NULL))`,
		workspaceID, pushover).Scan(&found)
	return found, err
}

// PushRecipients selects the devices to push about a new message (a root or a thread reply):
// members who can read it (never its author), by their notification level for its channel
// (direct conversations: all) and, at mentions, a message that addresses them (Addresses). With pushover, the
// people selected who have Pushover set up are targets too, once each. A deleted message has
// none. Codes: not_found (message).
func (tx *Reader) PushRecipients(ctx context.Context, workspaceID, messageID string, pushover bool) (PushMessage, []PushTarget, error) {
	m, err := tx.messageLoad(ctx, messageID, "")
	if err != nil {
		return PushMessage{}, nil, err
	}
	if m.WorkspaceID != workspaceID {
		return PushMessage{}, nil, NotFound("message")
	}
	pm := PushMessage{WorkspaceID: m.WorkspaceID, MessageID: m.ID, AuthorName: m.Author.DisplayName}
	place := `SELECT w.route_id, c.route_id, c.name FROM workspaces w JOIN channels c ON c.workspace_id = w.id
		WHERE w.id = $1 AND c.id = $2`
	placeID := m.ChannelID
	if m.DirectConversationID != "" {
		place = `SELECT w.route_id, d.route_id, '' FROM workspaces w JOIN dms d ON d.workspace_id = w.id
			WHERE w.id = $1 AND d.id = $2`
		placeID = m.DirectConversationID
	}
	if err := tx.queryRow(ctx, place, m.WorkspaceID, placeID).Scan(&pm.WorkspaceRouteID, &pm.PlaceRouteID, &pm.ChannelName); err != nil {
		return PushMessage{}, nil, notFoundAs(err, "conversation")
	}
	if !m.IsRoot() {
		if err := tx.queryRow(ctx, `SELECT coalesce(route_id, '') FROM messages WHERE workspace_id = $1 AND id = $2`,
			m.WorkspaceID, m.ThreadRootID).Scan(&pm.ThreadRouteID); err != nil {
			return PushMessage{}, nil, notFoundAs(err, "message")
		}
	}
	if m.DeletedAt != nil {
		return pm, nil, nil
	}
	readers, err := tx.pushReaders(ctx, m, "")
	if err != nil {
		return PushMessage{}, nil, err
	}
	var users []string
	var viaPushover []PushTarget
	for _, r := range readers {
		if PushSelects(r.level, m.Body, r.handle, r.online) {
			users = append(users, r.userID)
			if pushover && r.pushover {
				viaPushover = append(viaPushover, PushTarget{UserID: r.userID, Pushover: true})
			}
		}
	}
	if len(users) == 0 {
		return pm, nil, nil
	}
	rows, err := tx.query(ctx, `SELECT user_id, id FROM push_devices WHERE user_id = ANY($1) ORDER BY user_id, id`, users)
	if err != nil {
		return PushMessage{}, nil, err
	}
	targets, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (PushTarget, error) {
		var t PushTarget
		err := row.Scan(&t.UserID, &t.DeviceID)
		return t, err
	})
	return pm, append(targets, viaPushover...), err
}

// PushSend is what a worker needs to send one push that passed PushSendCheck: the device's
// endpoint and keys, the registration it was checked under (Version), the key to sign with,
// and the message body as it reads now.
type PushSend struct {
	DeviceID string
	Version  time.Time
	Endpoint string
	P256dh   string
	Auth     string
	Key      PushKey
	Body     string
}

// PushSendCheck re-checks a queued push immediately before it is sent and returns what to send,
// or the reason (a PushDrop… constant) to drop it: the device is still registered to the
// recipient under a live session (a development device has none) and under the current key,
// its backoff has elapsed, the message is not deleted, the recipient can still read it, and the
// rules applied to the message and settings as they are now (handle, level, mention edits)
// still select the recipient.
func (tx *Tx) PushSendCheck(ctx context.Context, t PushTarget, messageID string) (PushSend, string, error) {
	s := PushSend{DeviceID: t.DeviceID}
	var owner string
	var session, key *string
	var backoff *time.Time
	err := tx.queryRow(ctx, `SELECT user_id, endpoint, p256dh, auth, registered_at, session_id, key_fingerprint, backoff_until
		FROM push_devices WHERE id = $1`, t.DeviceID).Scan(&owner, &s.Endpoint, &s.P256dh, &s.Auth, &s.Version,
		&session, &key, &backoff)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && owner != t.UserID) {
		return PushSend{}, PushDropDeviceGone, nil
	}
	if err != nil {
		return PushSend{}, "", err
	}
	if session != nil {
		live, err := tx.SessionLive(ctx, *session)
		if err != nil || !live {
			return PushSend{}, PushDropSessionEnded, err
		}
	}
	current, ok, err := tx.PushKeyCurrent(ctx)
	if err != nil || !ok {
		return PushSend{}, PushDropDisabled, err
	}
	if key == nil || *key != current.Fingerprint {
		return PushSend{}, PushDropKeyRetired, nil
	}
	s.Key = current
	if backoff != nil && backoff.After(tx.now) {
		return PushSend{}, PushDropBackoff, nil
	}
	body, reason, err := tx.pushMessageCheck(ctx, t.UserID, messageID)
	if reason != "" || err != nil {
		return PushSend{}, reason, err
	}
	s.Body = body
	return s, "", nil
}

// pushMessageCheck is the part of a send's re-check about the message, shared by web push and
// Pushover: it is not deleted, userID can still read it, and the rules applied to the message
// and settings as they are now still select them. It returns the body as it reads now, or the
// reason to drop the push.
func (tx *Tx) pushMessageCheck(ctx context.Context, userID, messageID string) (string, string, error) {
	m, err := tx.messageLoad(ctx, messageID, "")
	if e, ok := ErrorOf(err); ok && e.Code == CodeNotFound {
		return "", PushDropMessageDeleted, nil
	}
	if err != nil {
		return "", "", err
	}
	if m.DeletedAt != nil {
		return "", PushDropMessageDeleted, nil
	}
	readers, err := tx.pushReaders(ctx, m, userID)
	if err != nil {
		return "", "", err
	}
	if len(readers) == 0 {
		return "", PushDropNotReadable, nil
	}
	if !PushSelects(readers[0].level, m.Body, readers[0].handle, readers[0].online) {
		return "", PushDropNotSelected, nil
	}
	return m.Body, "", nil
}
