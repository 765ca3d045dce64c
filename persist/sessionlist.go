package persist

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// LiveSession is a session as its owner sees it in the list of where they are signed in: never
// the token, only when and how it began and when it ends.
type LiveSession struct {
	ID        string    `json:"id"`
	Method    string    `json:"method"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Current marks the session the request came with.
	Current bool `json:"current"`
}

// SessionList returns the user's live sessions (not signed out, not expired), newest first;
// current names the caller's own ("" for a caller without one).
func (tx *Reader) SessionList(ctx context.Context, userID, current string) ([]LiveSession, error) {
	rows, err := tx.query(ctx, `SELECT id, method, created_at, expires_at FROM sessions
		WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 ORDER BY created_at DESC, id DESC`, userID, tx.now)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LiveSession, error) {
		var s LiveSession
		err := row.Scan(&s.ID, &s.Method, &s.CreatedAt, &s.ExpiresAt)
		s.Current = s.ID == current
		return s, err
	})
	if list == nil {
		list = []LiveSession{}
	}
	return list, err
}

// SessionRevokeOthers signs the user out of every live session but keep (the caller's; ""
// for a caller without a session, who keeps none) and returns how many ended. The kept
// session is locked and must still be live: one signed out meanwhile gets unauthenticated
// and nothing is written.
func (tx *Tx) SessionRevokeOthers(ctx context.Context, userID, keep string) (int, error) {
	if keep != "" {
		var id string
		err := tx.queryRow(ctx, `SELECT id FROM sessions
			WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL AND expires_at > $3 FOR UPDATE`, keep, userID, tx.now).Scan(&id)
		if e := notFoundAs(err, "session"); e != err {
			return 0, Errorf(CodeUnauthenticated, "this session was signed out; sign in again")
		} else if err != nil {
			return 0, err
		}
	}
	return tx.revokeOtherSessions(ctx, userID, keep)
}

// revokeOtherSessions ends the user's live sessions except keep, noting each for the sockets
// that must close; a password change uses it too.
func (tx *Tx) revokeOtherSessions(ctx context.Context, userID, keep string) (int, error) {
	rows, err := tx.query(ctx, `UPDATE sessions SET revoked_at = $3
		WHERE user_id = $1 AND id <> $2 AND revoked_at IS NULL AND expires_at > $3 RETURNING id`, userID, keep, tx.now)
	if err != nil {
		return 0, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	for _, id := range ids {
		tx.noteRevoked(Revocation{SessionID: id})
	}
	return len(ids), err
}
