package persist

import (
	"context"
	"time"
)

// MagicLinkLifetime is how long a magic-link token stays usable.
const MagicLinkLifetime = 15 * time.Minute

// MagicLinkCreate records a single-use sign-in token for email and returns the raw `mgt_` token.
// Codes: invalid_request (bad email or name).
func (tx *Tx) MagicLinkCreate(ctx context.Context, email, displayName string) (string, error) {
	email = NormalizeEmail(email)
	if !validEmail(email) {
		return "", Invalid("email must be an address like name@example.com")
	}
	if displayName != "" {
		if _, err := NormalizeDisplayName(displayName); err != nil {
			return "", err
		}
	}
	raw, hash := NewSecret(PrefixMagicLinkToken)
	_, err := tx.exec(ctx, `INSERT INTO magic_links (token_hash, email, display_name, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)`, hash, email, displayName, tx.now, tx.now.Add(MagicLinkLifetime))
	return raw, err
}

// MagicLinkConsume spends a token: the user of its email is found or created and a session starts.
// Unknown, used and expired tokens give the same unauthenticated error.
func (tx *Tx) MagicLinkConsume(ctx context.Context, raw string) (User, Session, string, error) {
	var email, name string
	err := tx.queryRow(ctx, `UPDATE magic_links SET consumed_at = $2
		WHERE token_hash = $1 AND consumed_at IS NULL AND expires_at > $2
		RETURNING email, display_name`, HashSecret(raw), tx.now).Scan(&email, &name)
	if err != nil {
		if e := notFoundAs(err, "token"); e != err {
			return User{}, Session{}, "", Errorf(CodeUnauthenticated, "the sign-in link is unknown, used or expired")
		}
		return User{}, Session{}, "", err
	}
	u, err := tx.UserFindOrCreateByEmail(ctx, email, name)
	if err != nil {
		return User{}, Session{}, "", err
	}
	s, token, err := tx.SessionCreate(ctx, u.ID, MethodMagicLink)
	if err != nil {
		return User{}, Session{}, "", err
	}
	return u, s, token, nil
}
