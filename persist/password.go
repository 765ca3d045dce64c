package persist

import (
	"context"
	"strings"
	"time"
)

// The per-account budget of wrong current passwords on a password change.
const (
	PasswordChangeFailureLimit  = 5
	PasswordChangeFailureWindow = 15 * time.Minute
)

// PrefixPasswordChangeAttempt is the id prefix of a password-change attempt.
const PrefixPasswordChangeAttempt = "pca_"

// InvalidCredentials is the one answer of every failed password sign-in, whatever the reason:
// unknown identifier, no password on file, wrong password, or a password replaced meanwhile.
func InvalidCredentials() *Error {
	return Errorf(CodeInvalidCredentials, "the identifier or the password is wrong")
}

// PasswordSet stores an argon2id hash as the password of the live human with this email,
// enrolling the account in password sign-in. It ends no session. Bots have no password.
// Codes: not_found.
func (tx *Tx) PasswordSet(ctx context.Context, email, hash string) (User, error) {
	return tx.passwordStore(ctx, email, &hash)
}

// PasswordClear removes the password of the live human with this email, so that password
// sign-in no longer reaches the account. Codes: not_found.
func (tx *Tx) PasswordClear(ctx context.Context, email string) (User, error) {
	return tx.passwordStore(ctx, email, nil)
}

func (tx *Tx) passwordStore(ctx context.Context, email string, hash *string) (User, error) {
	u, err := scanUser(tx.queryRow(ctx, `UPDATE users SET password_hash = $2, updated_at = $3
		WHERE email = $1 AND kind = 'human' AND deleted_at IS NULL
		RETURNING `+userColumns, NormalizeEmail(email), hash, tx.now))
	if err != nil {
		return User{}, notFoundAs(err, "account with that email")
	}
	return u, nil
}

// PasswordCredential is what a password sign-in verifies: the account an identifier names and
// its stored hash.
type PasswordCredential struct {
	UserID string
	Hash   string // "" when the account has no password
}

// PasswordLookup finds the live human an identifier names, matched case-insensitively: an
// email address, or a handle with or without its @. An identifier that names nobody gives the
// zero credential and no error, so a caller treats unknown accounts, accounts without a
// password and wrong passwords alike.
func (tx *Tx) PasswordLookup(ctx context.Context, identifier string) (PasswordCredential, error) {
	email, handle := identifierParts(identifier)
	var c PasswordCredential
	err := tx.queryRow(ctx, `SELECT id, coalesce(password_hash, '') FROM users
		WHERE kind = 'human' AND deleted_at IS NULL AND (email = $1 OR handle = $2)`, email, handle).Scan(&c.UserID, &c.Hash)
	if e := notFoundAs(err, "account"); e != err {
		return PasswordCredential{}, nil
	}
	return c, err
}

// identifierParts reads a sign-in identifier as an email address or as a handle; the other
// part is "", which matches no row.
func identifierParts(identifier string) (email, handle string) {
	id := strings.ToLower(strings.TrimSpace(identifier))
	if strings.Contains(id, "@") && !strings.HasPrefix(id, "@") {
		return id, ""
	}
	return "", strings.TrimPrefix(id, "@")
}

// PasswordIdentifierKey is the canonical form of a sign-in identifier, for per-identifier
// budgets: every spelling that reaches the same account gives the same key.
func PasswordIdentifierKey(identifier string) string {
	email, handle := identifierParts(identifier)
	return email + "@" + handle
}

// PasswordSessionCreate starts a password session for userID, but only while the account's
// stored hash is still verifiedHash: verification runs outside any transaction, so the
// password may have been changed or cleared meanwhile, and then this gives the same
// invalid_credentials as a wrong password. The account row is read FOR SHARE, so a concurrent
// change either waits for this session (and revokes it) or commits first (and this fails).
// Codes: invalid_credentials.
func (tx *Tx) PasswordSessionCreate(ctx context.Context, userID, verifiedHash string) (User, Session, string, error) {
	u, err := scanUser(tx.queryRow(ctx, `SELECT `+userColumns+` FROM users
		WHERE id = $1 AND kind = 'human' AND deleted_at IS NULL AND password_hash = $2 FOR SHARE`, userID, verifiedHash))
	if err != nil {
		if e := notFoundAs(err, "account"); e != err {
			return User{}, Session{}, "", InvalidCredentials()
		}
		return User{}, Session{}, "", err
	}
	s, token, err := tx.SessionCreate(ctx, userID, MethodPassword)
	if err != nil {
		return User{}, Session{}, "", err
	}
	return u, s, token, nil
}

// PasswordChangeAttempt is a password change under way: its reservation in the account's
// budget and the stored hash the current password is to be verified against.
type PasswordChangeAttempt struct {
	ID       string
	Snapshot string
}

// PasswordChangeBegin reserves one attempt of the account's budget of wrong current passwords
// (PasswordChangeFailureLimit in PasswordChangeFailureWindow) and returns it with the stored
// hash. The reservation counts as a failure until the attempt ends otherwise:
// PasswordChange removes it on success, PasswordChangeRelease when the attempt stops for any
// reason but a wrong current password. Reserving before the slow verification keeps concurrent
// guesses within the budget. An account without a password stays as it is.
// Codes: unauthenticated (no session behind the request), conflict (no password on file),
// rate_limited.
func (tx *Tx) PasswordChangeBegin(ctx context.Context, userID, sessionID string) (PasswordChangeAttempt, error) {
	if sessionID == "" {
		return PasswordChangeAttempt{}, Errorf(CodeUnauthenticated, "changing a password needs a signed-in session (cookie or bearer session token)")
	}
	var hash *string
	err := tx.queryRow(ctx, `SELECT password_hash FROM users WHERE id = $1 AND kind = 'human' AND deleted_at IS NULL
		FOR NO KEY UPDATE`, userID).Scan(&hash)
	if err != nil {
		return PasswordChangeAttempt{}, notFoundAs(err, "account")
	}
	if hash == nil {
		return PasswordChangeAttempt{}, Conflict("this account has no password to change; an operator enrols it with `natter admin password set`")
	}
	since := tx.now.Add(-PasswordChangeFailureWindow)
	if _, err := tx.exec(ctx, `DELETE FROM password_change_attempts WHERE user_id = $1 AND started_at <= $2`, userID, since); err != nil {
		return PasswordChangeAttempt{}, err
	}
	var n int
	var oldest *time.Time
	if err := tx.queryRow(ctx, `SELECT count(*), min(started_at) FROM password_change_attempts WHERE user_id = $1`,
		userID).Scan(&n, &oldest); err != nil {
		return PasswordChangeAttempt{}, err
	}
	if n >= PasswordChangeFailureLimit && oldest != nil {
		// The oldest failure leaves the window first.
		return PasswordChangeAttempt{}, RateLimited(oldest.Add(PasswordChangeFailureWindow).Sub(tx.now),
			"too many wrong current passwords: at most %d in %d minutes; try again later",
			PasswordChangeFailureLimit, int(PasswordChangeFailureWindow/time.Minute))
	}
	a := PasswordChangeAttempt{ID: NewID(PrefixPasswordChangeAttempt, tx.now), Snapshot: *hash}
	_, err = tx.exec(ctx, `INSERT INTO password_change_attempts (id, user_id, started_at) VALUES ($1, $2, $3)`, a.ID, userID, tx.now)
	return a, err
}

// PasswordChangeRelease gives back an attempt's reservation: the attempt ended without a wrong
// current password, so it does not count against the budget.
func (tx *Tx) PasswordChangeRelease(ctx context.Context, attemptID string) error {
	_, err := tx.exec(ctx, `DELETE FROM password_change_attempts WHERE id = $1`, attemptID)
	return err
}

// PasswordChangeParams describe a verified password change.
type PasswordChangeParams struct {
	UserID    string
	SessionID string // the caller's session, kept
	Attempt   PasswordChangeAttempt
	NewHash   string
}

// PasswordChange replaces the account's hash and revokes every other session of the account,
// keeping the caller's, all or nothing. It is conditional on what the caller checked before the
// transaction: the calling session must still be live, and the stored hash must still be the
// attempt's snapshot. Otherwise nothing is written (the caller then releases the attempt).
// Codes: unauthenticated (the calling session was revoked or expired), conflict (stale snapshot).
func (tx *Tx) PasswordChange(ctx context.Context, p PasswordChangeParams) (User, error) {
	var hash *string
	err := tx.queryRow(ctx, `SELECT password_hash FROM users WHERE id = $1 AND kind = 'human' AND deleted_at IS NULL
		FOR NO KEY UPDATE`, p.UserID).Scan(&hash)
	if e := notFoundAs(err, "account"); e != err {
		return User{}, Errorf(CodeUnauthenticated, "the account no longer exists")
	} else if err != nil {
		return User{}, err
	}
	// The caller's session row stays locked to commit, so a concurrent logout of it waits.
	var sessionID string
	err = tx.queryRow(ctx, `SELECT id FROM sessions
		WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL AND expires_at > $3 FOR UPDATE`,
		p.SessionID, p.UserID, tx.now).Scan(&sessionID)
	if e := notFoundAs(err, "session"); e != err {
		return User{}, Errorf(CodeUnauthenticated, "the session was signed out while the password was being changed; sign in again")
	} else if err != nil {
		return User{}, err
	}
	if hash == nil || *hash != p.Attempt.Snapshot {
		return User{}, Conflict("the password was changed or cleared while this request was being checked; nothing was changed")
	}
	if _, err := tx.exec(ctx, `UPDATE users SET password_hash = $2, updated_at = $3 WHERE id = $1`, p.UserID, p.NewHash, tx.now); err != nil {
		return User{}, err
	}
	if _, err := tx.revokeOtherSessions(ctx, p.UserID, p.SessionID); err != nil {
		return User{}, err
	}
	if err := tx.PasswordChangeRelease(ctx, p.Attempt.ID); err != nil {
		return User{}, err
	}
	return tx.UserGet(ctx, p.UserID)
}
