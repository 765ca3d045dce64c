package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime"
)

func (b passwordBundle) change(t *testing.T, token, current, next string) *servertest.Response {
	t.Helper()
	return b.h.Post(t, "/api/auth/password/change", token, map[string]string{"current_password": current, "new_password": next})
}

// enrolled is a user with a password and a signed-in session.
func (b passwordBundle) enrolled(t *testing.T, password string) servertest.Actor {
	t.Helper()
	a := b.h.NewUser(t)
	b.enrol(t, a.User, password)
	return a
}

// requirePassword checks which password signs the user in (and that the old one no longer
// does), clearing the login budget first.
func (b passwordBundle) requirePassword(t *testing.T, u persist.User, works string, fails ...string) {
	t.Helper()
	b.clock.Advance(time.Hour)
	for _, p := range fails {
		b.login(t, u.Email, p).RequireError(t, http.StatusUnauthorized, persist.CodeInvalidCredentials)
	}
	b.login(t, u.Email, works).RequireStatus(t, http.StatusOK)
}

func TestPasswordChange(t *testing.T) {
	t.Parallel()
	t.Run("ReplacesTheHashAndSignsOutEveryOtherSession", func(t *testing.T) {
		t.Parallel()
		// No periodic check would close the socket within the test: the announcement does.
		b := setupPasswords(t, servertest.WithRealtime(func(c *realtime.Config) {
			c.RevalidateInterval = time.Hour
			c.SweepInterval = time.Hour
		}))
		me := b.enrolled(t, "old password")
		laptop, phone := persisttest.Session(t, b.h.Store, me.User.ID), persisttest.Session(t, b.h.Store, me.User.ID)
		ws := persisttest.Workspace(t, b.h.Store, me.User.ID)
		phoneSocket, status := b.h.DialSocket(t, servertest.Dial{Path: "/api/realtime/ws?workspace_id=" + ws.ID, Token: phone})
		require.Equal(t, http.StatusSwitchingProtocols, status)
		mySocket, status := b.h.DialSocket(t, servertest.Dial{Path: "/api/realtime/ws?workspace_id=" + ws.ID, Token: me.Token})
		require.Equal(t, http.StatusSwitchingProtocols, status)
		stranger := b.enrolled(t, "stranger password")

		r := b.change(t, me.Token, "old password", "new password")
		r.RequireStatus(t, http.StatusOK)
		user := r.JSON(t)["user"].(map[string]any)
		require.Equal(t, me.User.ID, user["id"])
		require.Equal(t, true, user["password_enrolled"])

		require.EqualValues(t, 1008, phoneSocket.ExpectClose(t), "SPEC §Errors: WebSocket close 1008")
		for _, token := range []string{laptop, phone} {
			b.h.Get(t, "/api/me", token).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		}
		require.Equal(t, me.User.ID, meID(t, b.h.Get(t, "/api/me", me.Token)), "the caller's session is kept")
		require.Equal(t, stranger.User.ID, meID(t, b.h.Get(t, "/api/me", stranger.Token)), "other accounts are untouched")
		// The caller's own socket stays open: a new event still reaches it.
		persisttest.Channel(t, b.h.Store, persist.ActorFor(me.User), ws.ID, "after-change")
		require.Equal(t, "channel.created", mySocket.Next(t).Type)
		b.requirePassword(t, me.User, "new password", "old password")
	})
	t.Run("ByCookieNeedsTheCSRFHeader", func(t *testing.T) {
		t.Parallel()
		b := setupPasswords(t)
		me := b.enrolled(t, "old password")
		req := servertest.Request{Method: http.MethodPost, Path: "/api/auth/password/change",
			Body:    map[string]string{"current_password": "old password", "new_password": "new password"},
			Cookies: []*http.Cookie{{Name: "cc_session", Value: me.Token}}}
		b.h.Do(t, req).RequireError(t, http.StatusForbidden, persist.CodeCSRF)
		req.Header = map[string]string{"X-Natter-CSRF": "1", "Origin": "https://evil.example"}
		b.h.Do(t, req).RequireError(t, http.StatusForbidden, persist.CodeCSRF)
		req.Header = map[string]string{"X-Natter-CSRF": "1", "Content-Type": "text/plain"}
		b.h.Do(t, req).RequireError(t, http.StatusUnsupportedMediaType, persist.CodeUnsupportedMediaType)
		req.Header = map[string]string{"X-Natter-CSRF": "1"}
		b.h.Do(t, req).RequireStatus(t, http.StatusOK)
		b.requirePassword(t, me.User, "new password", "old password")
	})
	t.Run("BotTokensAreRefused", func(t *testing.T) {
		t.Parallel()
		b := setupPasswords(t)
		owner := b.enrolled(t, "old password")
		ws := persisttest.Workspace(t, b.h.Store, owner.User.ID)
		_, token := persisttest.Bot(t, b.h.Store, owner.User, ws.ID, &persisttest.BotOpts{Scopes: []string{"bot:admin"}})
		b.change(t, token.Token, "old password", "new password").RequireError(t, http.StatusForbidden, persist.CodeHumanOnly)
	})
	t.Run("NeedsASession", func(t *testing.T) {
		t.Parallel()
		b := setupPasswords(t)
		me := b.enrolled(t, "old password")
		var r *servertest.Response
		require.Zero(t, b.counted(func() {
			r = b.h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/auth/password/change",
				Body:   map[string]string{"current_password": "old password", "new_password": "new password"},
				Header: map[string]string{"X-Natter-User": me.User.ID}})
		}))
		r.RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		b.h.Post(t, "/api/auth/password/change", "", map[string]string{"current_password": "old password", "new_password": "new password"}).
			RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		b.requirePassword(t, me.User, "old password", "new password")
	})
	t.Run("NoPasswordIs409AndStaysUnenrolled", func(t *testing.T) {
		t.Parallel()
		b := setupPasswords(t)
		me := b.h.NewUser(t)
		var r *servertest.Response
		require.Zero(t, b.counted(func() { r = b.change(t, me.Token, "anything at all", "new password") }))
		r.RequireError(t, http.StatusConflict, persist.CodeConflict)
		require.Equal(t, false, b.h.Get(t, "/api/me", me.Token).JSON(t)["user"].(map[string]any)["password_enrolled"])
		b.login(t, me.User.Email, "new password").RequireError(t, http.StatusUnauthorized, persist.CodeInvalidCredentials)
	})
	t.Run("NewPasswordLength", func(t *testing.T) {
		t.Parallel()
		b := setupPasswords(t)
		me := b.enrolled(t, "old password")
		for _, next := range []string{"", "1234567", strings.Repeat("é", 7), strings.Repeat("x", 257)} {
			var r *servertest.Response
			require.Zero(t, b.counted(func() { r = b.change(t, me.Token, "old password", next) }))
			r.RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		}
		b.change(t, me.Token, "old password", strings.Repeat("é", 8)).RequireStatus(t, http.StatusOK)
		b.change(t, me.Token, strings.Repeat("é", 8), strings.Repeat("密", 256)).RequireStatus(t, http.StatusOK)
		b.requirePassword(t, me.User, strings.Repeat("密", 256), "old password")
	})
}

// TestPasswordChangeBudget: five wrong current passwords per account in fifteen minutes, and
// only failures count.
func TestPasswordChangeBudget(t *testing.T) {
	t.Parallel()
	t.Run("FiveWrongInFifteenMinutes", func(t *testing.T) {
		t.Parallel()
		b := setupPasswords(t)
		me := b.enrolled(t, "old password")
		other := persisttest.Session(t, b.h.Store, me.User.ID)
		for i := range 5 {
			token := []string{me.Token, other}[i%2] // the budget is the account's, not the session's
			b.change(t, token, "wrong guess", "new password").RequireError(t, http.StatusUnauthorized, persist.CodeInvalidCredentials)
		}
		var r *servertest.Response
		require.Zero(t, b.counted(func() { r = b.change(t, me.Token, "old password", "new password") }))
		r.RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
		require.Equal(t, "900", r.Header.Get("Retry-After"), "the first failure leaves the window in 15 minutes")
		b.clock.Advance(14 * time.Minute)
		r = b.change(t, me.Token, "old password", "new password")
		r.RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
		require.Equal(t, "60", r.Header.Get("Retry-After"))
		b.clock.Advance(time.Minute)
		b.change(t, me.Token, "old password", "new password").RequireStatus(t, http.StatusOK)
		b.h.Get(t, "/api/me", me.Token).RequireStatus(t, http.StatusOK) // a wrong guess signs nobody out
	})
	t.Run("OnlyFailuresCount", func(t *testing.T) {
		t.Parallel()
		b := setupPasswords(t)
		me := b.enrolled(t, "password 0")
		for i := range 6 {
			b.change(t, me.Token, "password "+string(rune('0'+i)), "password "+string(rune('1'+i))).RequireStatus(t, http.StatusOK)
		}
		for range 4 {
			b.change(t, me.Token, "wrong guess", "new password").RequireError(t, http.StatusUnauthorized, persist.CodeInvalidCredentials)
		}
		b.change(t, me.Token, "password 6", "password 7").RequireStatus(t, http.StatusOK)
		b.change(t, me.Token, "wrong guess", "new password").RequireError(t, http.StatusUnauthorized, persist.CodeInvalidCredentials)
		b.change(t, me.Token, "password 7", "password 8").RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
	})
	t.Run("ConcurrentGuessesStayWithinTheBudget", func(t *testing.T) {
		t.Parallel()
		// Five derivation slots, so that five guesses can be held at once.
		b := setupPasswordsWith(t, 5)
		me := b.enrolled(t, "old password")
		// Five guesses reach verification and are held there; the sixth, sent meanwhile, is
		// refused before it derives anything.
		reached, release := b.gate.arm(5)
		done := make(chan *servertest.Response, 5)
		for range 5 {
			go func() { done <- b.change(t, me.Token, "wrong guess", "new password") }()
		}
		waitFor(t, reached, 5)
		b.change(t, me.Token, "old password", "new password").RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
		close(release)
		for range 5 {
			(<-done).RequireError(t, http.StatusUnauthorized, persist.CodeInvalidCredentials)
		}
	})
}

// TestPasswordChangeRaces: both derivations run outside any transaction, so the write is
// conditional on the hash read before them and on the caller's session; a change that loses
// either condition writes nothing and gives its attempt back.
func TestPasswordChangeRaces(t *testing.T) {
	t.Parallel()
	// concurrently sends two changes and holds both after verifying the current password,
	// before either writes.
	concurrently := func(t *testing.T, b passwordBundle, tokens [2]string, next [2]string) [2]*servertest.Response {
		t.Helper()
		reached, release := b.gate.arm(2)
		var out [2]chan *servertest.Response
		for i := range out {
			out[i] = make(chan *servertest.Response, 1)
			go func() { out[i] <- b.change(t, tokens[i], "old password", next[i]) }()
		}
		waitFor(t, reached, 2)
		close(release)
		return [2]*servertest.Response{<-out[0], <-out[1]}
	}
	// winner returns which of two responses succeeded, checking that exactly one did.
	winner := func(t *testing.T, rs [2]*servertest.Response) (int, *servertest.Response) {
		t.Helper()
		if rs[0].Status == http.StatusOK {
			return 0, rs[1]
		}
		rs[1].RequireStatus(t, http.StatusOK)
		return 1, rs[0]
	}
	// budgetIntact checks that the account still has all five wrong guesses.
	budgetIntact := func(t *testing.T, b passwordBundle, token string) {
		t.Helper()
		for range 5 {
			b.change(t, token, "wrong guess", "whatever else").RequireError(t, http.StatusUnauthorized, persist.CodeInvalidCredentials)
		}
		b.change(t, token, "wrong guess", "whatever else").RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
	}

	t.Run("StaleSnapshotIs409", func(t *testing.T) {
		t.Parallel()
		b := setupPasswords(t)
		me := b.enrolled(t, "old password")
		rs := concurrently(t, b, [2]string{me.Token, me.Token}, [2]string{"first new", "second new"})
		won, lost := winner(t, rs)
		lost.RequireError(t, http.StatusConflict, persist.CodeConflict)
		b.h.Get(t, "/api/me", me.Token).RequireStatus(t, http.StatusOK)
		next := [2]string{"first new", "second new"}
		b.requirePassword(t, me.User, next[won], "old password", next[1-won])
		budgetIntact(t, b, me.Token)
	})
	t.Run("SessionSignedOutByTheWinnerIs401", func(t *testing.T) {
		t.Parallel()
		b := setupPasswords(t)
		me := b.enrolled(t, "old password")
		other := persisttest.Session(t, b.h.Store, me.User.ID)
		tokens := [2]string{me.Token, other}
		rs := concurrently(t, b, tokens, [2]string{"first new", "second new"})
		won, lost := winner(t, rs)
		lost.RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		b.h.Get(t, "/api/me", tokens[won]).RequireStatus(t, http.StatusOK)
		b.h.Get(t, "/api/me", tokens[1-won]).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		next := [2]string{"first new", "second new"}
		b.requirePassword(t, me.User, next[won], "old password", next[1-won])
		budgetIntact(t, b, tokens[won])
	})
	t.Run("CallerSignedOutMeanwhileIs401", func(t *testing.T) {
		t.Parallel()
		b := setupPasswords(t)
		me := b.enrolled(t, "old password")
		other := persisttest.Session(t, b.h.Store, me.User.ID)
		reached, release := b.gate.arm(1)
		done := make(chan *servertest.Response, 1)
		go func() { done <- b.change(t, me.Token, "old password", "new password") }()
		waitFor(t, reached, 1)
		b.h.Post(t, "/api/auth/logout", me.Token, nil).RequireStatus(t, http.StatusOK)
		close(release)
		(<-done).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		b.h.Get(t, "/api/me", other).RequireStatus(t, http.StatusOK) // nothing was revoked
		b.requirePassword(t, me.User, "old password", "new password")
		budgetIntact(t, b, other)
	})
	t.Run("LoginRacingAChangeIsRevokedOrRefused", func(t *testing.T) {
		t.Parallel()
		// A login holding the old password, whose session write meets the change: either the
		// change sees that session and signs it out, or the login's write fails.
		b := setupPasswords(t)
		me := b.enrolled(t, "old password")
		reached, release := b.gate.arm(1)
		done := make(chan *servertest.Response, 1)
		go func() { done <- b.login(t, me.User.Email, "old password") }()
		waitFor(t, reached, 1)
		changed := make(chan *servertest.Response, 1)
		go func() { changed <- b.change(t, me.Token, "old password", "new password") }()
		close(release)
		login := <-done
		(<-changed).RequireStatus(t, http.StatusOK)
		if login.Status == http.StatusOK {
			b.h.Get(t, "/api/me", login.JSON(t)["token"].(string)).RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		} else {
			login.RequireError(t, http.StatusUnauthorized, persist.CodeInvalidCredentials)
		}
	})
}
