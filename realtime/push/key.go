package push

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"github.com/natterchat/natter/persist"
)

// GenerateKey returns a new VAPID key pair (P-256) with its fingerprint, not yet stored.
func GenerateKey() (persist.PushKey, error) {
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return persist.PushKey{}, fmt.Errorf("generate push key: %w", err)
	}
	pub := priv.PublicKey().Bytes()
	sum := sha256.Sum256(pub)
	return persist.PushKey{
		Fingerprint: base64.RawURLEncoding.EncodeToString(sum[:]),
		PublicKey:   base64.RawURLEncoding.EncodeToString(pub),
		PrivateKey:  base64.RawURLEncoding.EncodeToString(priv.Bytes()),
	}, nil
}

// EnsureKey gives the server a key pair on its first start and returns the current one. Every
// replica calls it; one insert wins and all share that key.
func EnsureKey(ctx context.Context, store *persist.Store) (persist.PushKey, error) {
	candidate, err := GenerateKey()
	if err != nil {
		return persist.PushKey{}, err
	}
	return persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.PushKey, error) {
		return tx.PushKeyEnsure(ctx, candidate)
	})
}

// RotateKey replaces the server's key pair with a new one and returns it and the retired
// key's fingerprint ("" when there was none). Every registration is invalidated: devices
// register again when their app opens, and none is sent to under the retired key.
func RotateKey(ctx context.Context, store *persist.Store) (next persist.PushKey, retired string, err error) {
	next, err = GenerateKey()
	if err != nil {
		return persist.PushKey{}, "", err
	}
	retired, err = persist.WithTxV(ctx, store, func(tx *persist.Tx) (string, error) { return tx.PushKeyRotate(ctx, next) })
	return next, retired, err
}
