package persist

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// PushKey is a VAPID key pair of the server (P-256), stored in the database so that every
// replica signs with the same one. Keys are unpadded base64url: PublicKey the uncompressed point,
// PrivateKey the scalar; Fingerprint is the unpadded base64url SHA-256 of the public key's bytes.
type PushKey struct {
	Fingerprint string
	PublicKey   string
	PrivateKey  string
	CreatedAt   time.Time
	RetiredAt   *time.Time
}

const pushKeyColumns = `fingerprint, public_key, private_key, created_at, retired_at`

func scanPushKey(row pgx.Row) (PushKey, error) {
	var k PushKey
	err := row.Scan(&k.Fingerprint, &k.PublicKey, &k.PrivateKey, &k.CreatedAt, &k.RetiredAt)
	return k, err
}

// PushKeyCurrent returns the key the server signs with now; ok is false when there is none
// (web push is disabled until one exists).
func (tx *Tx) PushKeyCurrent(ctx context.Context) (k PushKey, ok bool, err error) {
	k, err = scanPushKey(tx.queryRow(ctx, `SELECT `+pushKeyColumns+` FROM push_server_keys WHERE retired_at IS NULL`))
	if errors.Is(err, pgx.ErrNoRows) {
		return PushKey{}, false, nil
	}
	return k, err == nil, err
}

// PushKeyEnsure makes candidate the current key when there is none and returns the current key
// (candidate, or the one already there). Replicas starting together agree: the one-current index
// lets exactly one insert win.
func (tx *Tx) PushKeyEnsure(ctx context.Context, candidate PushKey) (PushKey, error) {
	if _, err := tx.exec(ctx, `INSERT INTO push_server_keys (fingerprint, public_key, private_key, created_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
		candidate.Fingerprint, candidate.PublicKey, candidate.PrivateKey, tx.now); err != nil {
		return PushKey{}, err
	}
	k, ok, err := tx.PushKeyCurrent(ctx)
	if err == nil && !ok {
		err = errors.New("push key: none current after ensure")
	}
	return k, err
}

// PushKeyRotate retires the current key (if any) and makes next the current one. Every device
// registered under the retired key stops receiving pushes until it registers again; the sweep
// deletes those that have not within PushRetiredKeyGrace. It returns the retired key's
// fingerprint ("" when there was none). Codes: conflict (next is already on file).
func (tx *Tx) PushKeyRotate(ctx context.Context, next PushKey) (retired string, err error) {
	err = tx.queryRow(ctx, `UPDATE push_server_keys SET retired_at = $1 WHERE retired_at IS NULL RETURNING fingerprint`,
		tx.now).Scan(&retired)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", err
	}
	if _, err := tx.exec(ctx, `INSERT INTO push_server_keys (fingerprint, public_key, private_key, created_at)
		VALUES ($1, $2, $3, $4)`, next.Fingerprint, next.PublicKey, next.PrivateKey, tx.now); err != nil {
		return "", err
	}
	return retired, nil
}
