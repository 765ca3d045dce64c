package persist

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Token prefixes of CONTRACT.md.
const (
	PrefixSessionToken   = "sst_"
	PrefixMagicLinkToken = "mgt_"
)

// SessionLifetime is how long a session lives; there is no refresh, a new sign-in issues a new one.
const SessionLifetime = 30 * 24 * time.Hour

// Sign-in methods recorded on a session.
const (
	MethodMagicLink = "magic_link"
	MethodPassword  = "password"
	MethodGitHub    = "github"
	MethodOIDC      = "oidc"
	MethodProxy     = "proxy"
)

// Session is a signed-in browser or client. The raw token exists only in the creation result.
type Session struct {
	ID        string
	UserID    string
	Method    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// SessionCreate starts a session for a live user and returns it with its raw `sst_` token.
// Codes: not_found (user gone).
func (tx *Tx) SessionCreate(ctx context.Context, userID, method string) (Session, string, error) {
	raw, hash := NewSecret(PrefixSessionToken)
	s := Session{ID: NewID(PrefixSession, tx.now), UserID: userID, Method: method, CreatedAt: tx.now,
		ExpiresAt: tx.now.Add(SessionLifetime)}
	tag, err := tx.exec(ctx, `
		INSERT INTO sessions (id, user_id, token_hash, method, created_at, expires_at)
		SELECT $1, id, $3, $4, $5, $6 FROM users WHERE id = $2 AND deleted_at IS NULL`,
		s.ID, userID, hash, method, s.CreatedAt, s.ExpiresAt)
	if err != nil {
		return Session{}, "", err
	}
	if tag.RowsAffected() == 0 {
		return Session{}, "", NotFound("user")
	}
	return s, raw, nil
}

// SessionEnded is the refusal of a session token that no longer stands for anyone.
func SessionEnded() error {
	return Errorf(CodeUnauthenticated, "the session is unknown, expired or signed out")
}

// SessionResolve returns the live session behind a raw token and its user. Unknown, expired and
// revoked tokens, and sessions of deleted users, all give unauthenticated.
func (tx *Reader) SessionResolve(ctx context.Context, raw string) (Session, User, error) {
	var s Session
	row := tx.queryRow(ctx, `
		SELECT s.id, s.user_id, s.method, s.created_at, s.expires_at, `+userColumnsOf("u.")+`
		FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2 AND u.deleted_at IS NULL`,
		HashSecret(raw), tx.now)
	var u User
	err := row.Scan(append([]any{&s.ID, &s.UserID, &s.Method, &s.CreatedAt, &s.ExpiresAt}, userDest(&u)...)...)
	if err != nil {
		if e := notFoundAs(err, "session"); e != err {
			return Session{}, User{}, SessionEnded()
		}
		return Session{}, User{}, err
	}
	return s, u, nil
}

// SessionLive reports whether a session is still live, for sockets that revalidate their actor.
func (tx *Reader) SessionLive(ctx context.Context, id string) (bool, error) {
	var live bool
	err := tx.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.id = $1 AND s.revoked_at IS NULL AND s.expires_at > $2 AND u.deleted_at IS NULL)`, id, tx.now).Scan(&live)
	return live, err
}

// SessionRevoke ends the session behind a raw token; revoking an unknown or ended one is a no-op.
func (tx *Tx) SessionRevoke(ctx context.Context, raw string) error {
	rows, err := tx.query(ctx, `UPDATE sessions SET revoked_at = $2 WHERE token_hash = $1 AND revoked_at IS NULL
		RETURNING id`, HashSecret(raw), tx.now)
	if err != nil {
		return err
	}
	return tx.noteRevokedSessions(rows)
}

// noteRevokedSessions records the ids an UPDATE … RETURNING id of sessions produced.
func (tx *Tx) noteRevokedSessions(rows pgx.Rows) error {
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	for _, id := range ids {
		tx.noteRevoked(Revocation{SessionID: id})
	}
	return err
}
