package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server/accessproxy"
	"github.com/natterchat/natter/server/passwordhash"
)

// Budgets of password login attempts, shared by every replica: per client address, and the
// narrower one per account and client address over a longer window, which is what makes online
// guessing of one account impractical. The account budget is keyed by address too, so that a
// stranger's wrong passwords spend only the stranger's budget and never lock the owner out
// (issue 22, defect 7). Every attempt counts (a lost race with a password change excepted); a
// refused one costs no key derivation.
const (
	passwordLoginAddressLimit  = 20
	passwordLoginAddressWindow = 5 * time.Minute
	passwordLoginAccountLimit  = 10
	passwordLoginAccountWindow = time.Hour
)

// passwordLoginLimits are the two login budgets.
type passwordLoginLimits struct {
	byAddress *keyedLimiter
	byAccount *keyedLimiter // keyed by identifier and address
}

// passwordLoginRefusal is the sentence of a login over either budget.
const passwordLoginRefusal = "too many sign-in attempts; wait a while and try again"

// configureSignIn sets up the optional sign-in methods of cfg: passwords and the identity proxy.
func (s *Server) configureSignIn(cfg Config) error {
	now := cfg.Store.Now
	s.loginLimits = passwordLoginLimits{
		byAddress: newKeyedLimiter(cfg.Store, "password_login_address", passwordLoginAddressLimit,
			passwordLoginAddressWindow, passwordLoginRefusal),
		// The budget keeps the name of the earlier per-identifier one, so that its buckets are
		// pruned with the new ones.
		byAccount: newKeyedLimiter(cfg.Store, "password_login_identifier", passwordLoginAccountLimit,
			passwordLoginAccountWindow, passwordLoginRefusal),
	}
	if cfg.PasswordAuth {
		s.passwords = cfg.Passwords
		if s.passwords == nil {
			h, err := passwordhash.New(passwordhash.Config{})
			if err != nil {
				return err
			}
			s.passwords = h
		}
	}
	if p := cfg.IdentityProxy; p.TeamDomain != "" || p.Audience != "" {
		if p.Now == nil {
			p.Now = now
		}
		v, err := accessproxy.New(p)
		if err != nil {
			return errors.New("--proxy-team-domain and --proxy-audience: " + err.Error())
		}
		s.proxy = v
	}
	return nil
}

// decodePasswordRequest is the start of both password routes: 501 while password sign-in is
// off, then the sign-in preflight (JSON only, never from another site), then the body.
func (s *Server) decodePasswordRequest(w http.ResponseWriter, r *http.Request, dst any) error {
	if s.passwords == nil {
		return persist.Errorf(persist.CodeNotImplemented, "password sign-in is off on this server (--password-auth)")
	}
	if err := s.signInPreflight(r); err != nil {
		return err
	}
	return decodeJSON(w, r, dst)
}

type passwordLoginRequest struct {
	Identifier string `json:"identifier"`
	Password   string `json:"password"`
}

// handlePasswordLogin serves POST /api/auth/password/login: {identifier (email or handle, any
// case), password} → a session, as magic-link consume gives. A wrong password, an unknown
// identifier and an account without a password get the same 401, and each costs one key
// derivation. The stored hash is verified outside any transaction; the session is then created
// only if that hash is still the stored one, so a login racing a password change gets the same
// 401 (and its attempt is given back to the budgets).
func (s *Server) handlePasswordLogin(w http.ResponseWriter, r *http.Request) {
	var req passwordLoginRequest
	if err := s.decodePasswordRequest(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	address := clientAddress(r)
	byAddress, err := s.loginLimits.byAddress.allow(ctx, address)
	var byAccount attempt
	if err == nil {
		byAccount, err = s.loginLimits.byAccount.allow(ctx, persist.PasswordIdentifierKey(req.Identifier)+"\x00"+address)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cred, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.PasswordCredential, error) {
		return tx.PasswordLookup(ctx, req.Identifier)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ok, err := s.passwords.Verify(ctx, cred.Hash, req.Password)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !ok {
		s.writeError(w, r, persist.InvalidCredentials())
		return
	}
	type result struct {
		user    persist.User
		session persist.Session
		token   string
	}
	res, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (result, error) {
		u, sess, token, err := tx.PasswordSessionCreate(ctx, cred.UserID, cred.Hash)
		return result{u, sess, token}, err
	})
	if e, lost := persist.ErrorOf(err); lost && e.Code == persist.CodeInvalidCredentials {
		byAddress.release(ctx)
		byAccount.release(ctx)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeSignIn(w, r, res.user, res.session, res.token)
}

type passwordChangeRequest struct {
	CurrentPassword string `json:"current_password"`
	NewPassword     string `json:"new_password"`
}

// handlePasswordChange serves POST /api/auth/password/change: {current_password, new_password}
// from a session (cookie or bearer session token) → {user}. It replaces the hash and revokes
// every other session of the account, keeping the caller's, in one transaction. An account
// without a password gets 409; wrong current passwords are limited per account; a stale hash
// snapshot is 409 and a calling session revoked meanwhile is 401, both writing nothing.
func (s *Server) handlePasswordChange(w http.ResponseWriter, r *http.Request) {
	var req passwordChangeRequest
	if err := s.decodePasswordRequest(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := passwordhash.Check(req.NewPassword); err != nil {
		s.writeError(w, r, persist.Invalid("new_password %v", err))
		return
	}
	u, err := s.changePassword(r.Context(), callerOf(r.Context()), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"user": newMeView(u)})
}

// changePassword runs a change in its three steps, because the two key derivations (checking
// the current password, hashing the new one) are slow on purpose and run outside any
// transaction: reserve an attempt and read the hash, derive, then write conditionally on what
// was read. The reservation stays only when the current password was wrong.
func (s *Server) changePassword(ctx context.Context, caller *Caller, req passwordChangeRequest) (persist.User, error) {
	sessionID := ""
	if caller.Session != nil {
		sessionID = caller.Session.ID
	}
	attempt, err := persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.PasswordChangeAttempt, error) {
		return tx.PasswordChangeBegin(ctx, caller.User.ID, sessionID)
	})
	if err != nil {
		return persist.User{}, err
	}
	ok, err := s.passwords.Verify(ctx, attempt.Snapshot, req.CurrentPassword)
	if err == nil && !ok {
		return persist.User{}, persist.Errorf(persist.CodeInvalidCredentials, "current_password is wrong")
	}
	var newHash string
	if err == nil {
		newHash, err = s.passwords.Hash(ctx, req.NewPassword)
	}
	var u persist.User
	if err == nil {
		u, err = persist.WithTxV(ctx, s.store, func(tx *persist.Tx) (persist.User, error) {
			return tx.PasswordChange(ctx, persist.PasswordChangeParams{UserID: caller.User.ID, SessionID: sessionID,
				Attempt: attempt, NewHash: newHash})
		})
	}
	if err != nil {
		s.releasePasswordAttempt(ctx, attempt.ID)
	}
	return u, err
}

// releasePasswordAttempt gives an attempt back to the account's budget, even when the request's
// context has ended; a failure only leaves the attempt counted, and is logged.
func (s *Server) releasePasswordAttempt(ctx context.Context, attemptID string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.store.WithTx(rctx, func(tx *persist.Tx) error { return tx.PasswordChangeRelease(rctx, attemptID) }); err != nil {
		s.logger.Error("release a password-change attempt", "error", err, "correlation_id", correlationID(ctx))
	}
}
