package persist

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// PrefixPushDevice starts the id of a push device registration.
const PrefixPushDevice = "pdv_"

// Push device limits.
const (
	// MaxPushDevices is how many devices an account keeps; registering one more drops the
	// least recently registered.
	MaxPushDevices = 10
	// MaxPushLabelLength bounds a device label (the browser's user agent), in characters;
	// longer labels are cut.
	MaxPushLabelLength = 120
)

// PushRegistrant is who writes a push registration: the signed-in user and the session the
// request came with. Only the loopback development identity (Dev) may write without a session.
type PushRegistrant struct {
	UserID    string
	SessionID string
	Dev       bool
}

// PushSubscription is a browser's push subscription, already validated (an https endpoint at a
// public host, a P-256 point, a 16-byte secret): P256dh and Auth are unpadded base64url.
type PushSubscription struct {
	Endpoint string
	P256dh   string
	Auth     string
	Label    string
}

// PushRegistration is the body of a push write: the account the page believes is signed in,
// the subscription, and a validation failure of the subscription (reported after the guards, so
// a disabled server, a caller without a session and the wrong account answer first).
// Disabled reports push as off whatever the keys (the server runs with web push turned off).
type PushRegistration struct {
	UserID       string
	Subscription PushSubscription
	Invalid      error
	Disabled     bool
}

// PushDevice is a registration as its owner sees it: never the endpoint or the keys.
type PushDevice struct {
	Label         string     `json:"label"`
	CreatedAt     time.Time  `json:"created_at"`
	RegisteredAt  time.Time  `json:"registered_at"`
	LastSuccessAt *time.Time `json:"last_success_at,omitempty"`
	LastFailureAt *time.Time `json:"last_failure_at,omitempty"`
	FailureCount  int        `json:"failure_count"`
	BackoffUntil  *time.Time `json:"backoff_until,omitempty"`
	// ThisDevice is true for the registration of the browser that asked (GET ?device=).
	ThisDevice bool `json:"this_device"`

	digest string
	key    *string
}

const pushDeviceColumns = `label, created_at, registered_at, last_success_at, last_failure_at, failure_count,
	backoff_until, endpoint_digest, key_fingerprint`

func scanPushDevice(row pgx.Row) (PushDevice, error) {
	var d PushDevice
	err := row.Scan(&d.Label, &d.CreatedAt, &d.RegisteredAt, &d.LastSuccessAt, &d.LastFailureAt, &d.FailureCount,
		&d.BackoffUntil, &d.digest, &d.key)
	return d, err
}

// PushStatus is GET /api/me/push: whether push is enabled (a server key pair exists), the
// server's public key, the caller's devices, and whether the asking browser is one of them and
// registered under a retired key.
type PushStatus struct {
	Enabled         bool         `json:"enabled"`
	PublicKey       string       `json:"public_key,omitempty"`
	Devices         []PushDevice `json:"devices"`
	ThisDevice      bool         `json:"this_device"`
	ThisDeviceStale bool         `json:"this_device_stale"`
}

// PushStatusGet returns userID's push status; deviceDigest is the asking browser's unpadded
// base64url SHA-256 of its endpoint ("" when not asked). disabled reports push as off whatever
// the keys (the server runs with web push turned off).
func (tx *Tx) PushStatusGet(ctx context.Context, userID, deviceDigest string, disabled bool) (PushStatus, error) {
	st := PushStatus{Devices: []PushDevice{}}
	key, ok, err := tx.PushKeyCurrent(ctx)
	if err != nil {
		return PushStatus{}, err
	}
	if ok && !disabled {
		st.Enabled, st.PublicKey = true, key.PublicKey
	}
	rows, err := tx.query(ctx, `SELECT `+pushDeviceColumns+` FROM push_devices WHERE user_id = $1
		ORDER BY registered_at DESC, id DESC`, userID)
	if err != nil {
		return PushStatus{}, err
	}
	defer rows.Close()
	for rows.Next() {
		d, err := scanPushDevice(rows)
		if err != nil {
			return PushStatus{}, err
		}
		if deviceDigest != "" && d.digest == deviceDigest {
			d.ThisDevice, st.ThisDevice = true, true
			st.ThisDeviceStale = d.key != nil && (!ok || *d.key != key.Fingerprint)
		}
		st.Devices = append(st.Devices, d)
	}
	return st, rows.Err()
}

// pushWriteGuard is the check every push write makes, in the spec's order: push enabled (a
// current key), a session (or the development identity), and the claimed account being the
// signed-in one. Codes: push_disabled, forbidden, push_account_mismatch.
func (tx *Tx) pushWriteGuard(ctx context.Context, who PushRegistrant, in PushRegistration) (PushKey, error) {
	key, ok, err := tx.PushKeyCurrent(ctx)
	if err != nil {
		return PushKey{}, err
	}
	if !ok || in.Disabled {
		return PushKey{}, Errorf(CodePushDisabled, "web push is not enabled on this server")
	}
	if who.SessionID == "" && !who.Dev {
		return PushKey{}, Forbidden("registering a push device needs a signed-in session")
	}
	if in.UserID != who.UserID {
		return PushKey{}, Errorf(CodePushAccountMismatch, "user_id is not the signed-in account; sign in again in this browser")
	}
	return key, in.Invalid
}

// PushDeviceRegister registers a browser's subscription for the signed-in user under the
// current server key, replacing any registration of the same endpoint (whoever made it): the
// failure run and backoff end. An account keeps MaxPushDevices; the least recently registered
// beyond that are dropped. Codes: push_disabled (no key pair), forbidden (no session),
// push_account_mismatch (in.UserID is another account; nothing is written), then
// invalid_request (in.Invalid).
func (tx *Tx) PushDeviceRegister(ctx context.Context, who PushRegistrant, in PushRegistration) (PushDevice, error) {
	key, err := tx.pushWriteGuard(ctx, who, in)
	if err != nil {
		return PushDevice{}, err
	}
	// One registration at a time per account, so the cap holds under concurrency.
	if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('push-devices:' || $1, 0))`, who.UserID); err != nil {
		return PushDevice{}, err
	}
	sub := in.Subscription
	label := sub.Label
	if utf8.RuneCountInString(label) > MaxPushLabelLength {
		label = string([]rune(label)[:MaxPushLabelLength])
	}
	d, err := scanPushDevice(tx.queryRow(ctx, `
		INSERT INTO push_devices AS d (id, user_id, endpoint, endpoint_digest, p256dh, auth, label, session_id,
			key_fingerprint, created_at, registered_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, nullif($8, ''), $9, $10, $10)
		ON CONFLICT (endpoint_digest) DO UPDATE SET
			created_at = CASE WHEN d.user_id = EXCLUDED.user_id THEN d.created_at ELSE EXCLUDED.created_at END,
			last_success_at = CASE WHEN d.user_id = EXCLUDED.user_id THEN d.last_success_at END,
			user_id = EXCLUDED.user_id, endpoint = EXCLUDED.endpoint, p256dh = EXCLUDED.p256dh, auth = EXCLUDED.auth,
			label = EXCLUDED.label, session_id = EXCLUDED.session_id, key_fingerprint = EXCLUDED.key_fingerprint,
			registered_at = EXCLUDED.registered_at, failure_count = 0, failure_run_started_at = NULL,
			last_failure_at = NULL, backoff_until = NULL
		RETURNING `+pushDeviceColumns,
		NewID(PrefixPushDevice, tx.now), who.UserID, sub.Endpoint, PushEndpointDigest(sub.Endpoint), sub.P256dh,
		sub.Auth, label, who.SessionID, key.Fingerprint, tx.now))
	if err != nil {
		return PushDevice{}, err
	}
	if _, err := tx.exec(ctx, `DELETE FROM push_devices WHERE user_id = $1 AND id NOT IN (
			SELECT id FROM push_devices WHERE user_id = $1 ORDER BY registered_at DESC, id DESC LIMIT $2)`,
		who.UserID, MaxPushDevices); err != nil {
		return PushDevice{}, err
	}
	d.ThisDevice = true
	return d, nil
}

// PushDeviceRemove removes the signed-in user's registration of endpoint; removing one that is
// not there changes nothing (removed is false). Only in.Subscription.Endpoint is read.
// Codes: those of PushDeviceRegister.
func (tx *Tx) PushDeviceRemove(ctx context.Context, who PushRegistrant, in PushRegistration) (removed bool, err error) {
	if _, err := tx.pushWriteGuard(ctx, who, in); err != nil {
		return false, err
	}
	tag, err := tx.exec(ctx, `DELETE FROM push_devices WHERE user_id = $1 AND endpoint_digest = $2`,
		who.UserID, PushEndpointDigest(in.Subscription.Endpoint))
	return tag.RowsAffected() > 0, err
}

// PushEndpointDigest is the unpadded base64url SHA-256 of an endpoint: how a browser names its
// registration without sending the endpoint (GET /api/me/push?device=).
func PushEndpointDigest(endpoint string) string {
	sum := sha256.Sum256([]byte(endpoint))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// PushBackoffSchedule is the wait after the 1st, 2nd, … consecutive failure of a device; the
// last entry repeats.
var PushBackoffSchedule = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
	6 * time.Hour, 24 * time.Hour}

// PushMaxBackoff caps every backoff, a push service's Retry-After included.
const PushMaxBackoff = 24 * time.Hour

// PushBackoff is the wait after the failure-th consecutive failure (1 is the first): the
// schedule's entry, or a longer Retry-After, at most PushMaxBackoff.
func PushBackoff(failure int, retryAfter time.Duration) time.Duration {
	wait := PushBackoffSchedule[min(max(failure, 1), len(PushBackoffSchedule))-1]
	return min(max(wait, retryAfter), PushMaxBackoff)
}

// PushDeviceDelivered records a delivery to a device: its failure run and backoff end. version
// is the registration time the push was prepared under; a registration made since wins.
func (tx *Tx) PushDeviceDelivered(ctx context.Context, deviceID string, version time.Time) error {
	_, err := tx.exec(ctx, `UPDATE push_devices SET last_success_at = $3, failure_count = 0,
		failure_run_started_at = NULL, last_failure_at = NULL, backoff_until = NULL
		WHERE id = $1 AND registered_at = $2`, deviceID, version, tx.now)
	return err
}

// PushDeviceGone deletes a device whose push service answered that the subscription is gone
// (404 or 410), unless it registered again meanwhile.
func (tx *Tx) PushDeviceGone(ctx context.Context, deviceID string, version time.Time) error {
	_, err := tx.exec(ctx, `DELETE FROM push_devices WHERE id = $1 AND registered_at = $2`, deviceID, version)
	return err
}

// PushDeviceFailed records a refusal that is not final (429, 5xx, a timeout): it starts or
// extends the failure run and backs the device off by PushBackoff. It returns the end of the
// backoff (zero when the device is gone or registered again meanwhile).
func (tx *Tx) PushDeviceFailed(ctx context.Context, deviceID string, version time.Time, retryAfter time.Duration) (time.Time, error) {
	var failures int
	err := tx.queryRow(ctx, `SELECT failure_count FROM push_devices WHERE id = $1 AND registered_at = $2 FOR UPDATE`,
		deviceID, version).Scan(&failures)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	until := tx.now.Add(PushBackoff(failures+1, retryAfter))
	_, err = tx.exec(ctx, `UPDATE push_devices SET failure_count = failure_count + 1,
		failure_run_started_at = coalesce(failure_run_started_at, $2), last_failure_at = $2, backoff_until = $3
		WHERE id = $1`, deviceID, tx.now, until)
	return until, err
}

// Dead-device rules of the sweep.
const (
	// PushDeadRun is how long a failure run must have lasted (with at least two refusals, the
	// latest under PushDeadRecent old) for the device to be swept.
	PushDeadRun = 7 * 24 * time.Hour
	// PushDeadRecent is how recent the latest refusal of a dead run must be.
	PushDeadRecent = 24 * time.Hour
	// PushRetiredKeyGrace is how long a device under a retired key has to register again.
	PushRetiredKeyGrace = 30 * 24 * time.Hour
)

// PushSweepResult counts the devices a sweep removed, by rule.
type PushSweepResult struct {
	DeadRun      int64 // (a) refused through a whole week with nothing delivered
	RetiredKey   int64 // (b) under a key retired PushRetiredKeyGrace ago, not registered since
	SessionEnded int64 // (c) the registering session ended or no longer exists
}

// Total is the number of devices removed.
func (r PushSweepResult) Total() int64 { return r.DeadRun + r.RetiredKey + r.SessionEnded }

// PushSweep removes dead devices, in one transaction: (a) a failure run that began more than
// PushDeadRun ago, holds at least two refusals and whose latest refusal is less than
// PushDeadRecent old; (b) a device under a key retired at least PushRetiredKeyGrace ago that has
// not registered since (a device with no key on file is never under a retired key); (c) a device
// whose session was signed out, revoked or expired, or no longer exists (a development device
// has no session and is never removed by this rule).
func (tx *Tx) PushSweep(ctx context.Context) (PushSweepResult, error) {
	var r PushSweepResult
	tag, err := tx.exec(ctx, `DELETE FROM push_devices WHERE failure_count >= 2
		AND failure_run_started_at < $1 AND last_failure_at > $2`, tx.now.Add(-PushDeadRun), tx.now.Add(-PushDeadRecent))
	if err != nil {
		return r, err
	}
	r.DeadRun = tag.RowsAffected()
	grace := tx.now.Add(-PushRetiredKeyGrace)
	tag, err = tx.exec(ctx, `DELETE FROM push_devices d USING push_server_keys k
		WHERE d.key_fingerprint = k.fingerprint AND k.retired_at <= $1 AND d.registered_at <= $1`, grace)
	if err != nil {
		return r, err
	}
	r.RetiredKey = tag.RowsAffected()
	tag, err = tx.exec(ctx, `DELETE FROM push_devices d WHERE d.session_id IS NOT NULL AND NOT EXISTS (
		SELECT 1 FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.id = d.session_id AND s.revoked_at IS NULL AND s.expires_at > $1 AND u.deleted_at IS NULL)`, tx.now)
	if err != nil {
		return r, err
	}
	r.SessionEnded = tag.RowsAffected()
	return r, nil
}
