package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server"
	"github.com/natterchat/natter/server/passwordhash"
)

// derivationGate pauses derivations on demand: once armed for n, each of the next n
// derivations reports on reached and waits, holding its slot, until release is closed.
type derivationGate struct {
	mu      sync.Mutex
	hold    int
	reached chan struct{}
	release chan struct{}
}

func (g *derivationGate) after() {
	g.mu.Lock()
	if g.hold == 0 {
		g.mu.Unlock()
		return
	}
	g.hold--
	reached, release := g.reached, g.release
	g.mu.Unlock()
	reached <- struct{}{}
	<-release
}

// arm pauses the next n derivations; close the returned release channel to let them go on.
func (g *derivationGate) arm(n int) (reached <-chan struct{}, release chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold, g.reached, g.release = n, make(chan struct{}, n), make(chan struct{})
	return g.reached, g.release
}

// waitFor receives n signals under a generous deadline.
func waitFor(t *testing.T, ch <-chan struct{}, n int) {
	t.Helper()
	for range n {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("a derivation did not arrive")
		}
	}
}

type passwordBundle struct {
	h      *servertest.Harness
	hasher *passwordhash.Hasher
	gate   *derivationGate
	clock  *persisttest.Clock
}

// setupPasswords runs the API with password sign-in on, cheap hashing parameters (the format
// and every rule are the same), a gate on derivations and a pinned clock.
func setupPasswords(t *testing.T, opts ...servertest.Option) passwordBundle {
	t.Helper()
	return setupPasswordsWith(t, 2, opts...) // SPEC §Limits: 2 concurrent derivations
}

// setupPasswordsWith is setupPasswords with another bound on concurrent derivations.
func setupPasswordsWith(t *testing.T, concurrency int, opts ...servertest.Option) passwordBundle {
	t.Helper()
	gate := &derivationGate{}
	hasher, err := passwordhash.New(passwordhash.Config{Params: passwordhash.Params{Time: 1, MemoryKiB: 64, Threads: 1},
		Concurrency: concurrency, AfterDerive: gate.after})
	require.NoError(t, err)
	clock := persisttest.NewClock()
	h := servertest.New(t, append([]servertest.Option{servertest.WithClock(clock), servertest.WithConfig(func(c *server.Config) {
		c.PasswordAuth = true
		c.Passwords = hasher
	})}, opts...)...)
	return passwordBundle{h: h, hasher: hasher, gate: gate, clock: clock}
}

// enrol sets a user's password the way `natter admin password set` does.
func (b passwordBundle) enrol(t *testing.T, u persist.User, password string) {
	t.Helper()
	ctx := context.Background()
	hash, err := b.hasher.Hash(ctx, password)
	require.NoError(t, err)
	_, err = persist.WithTxV(ctx, b.h.Store, func(tx *persist.Tx) (persist.User, error) { return tx.PasswordSet(ctx, u.Email, hash) })
	require.NoError(t, err)
}

// sessionMethod is the sign-in method of the session behind a raw token.
func sessionMethod(t *testing.T, store *persist.Store, token string) string {
	t.Helper()
	ctx := context.Background()
	m, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (string, error) {
		s, _, err := tx.SessionResolve(ctx, token)
		return s.Method, err
	})
	require.NoError(t, err)
	return m
}

func (b passwordBundle) login(t *testing.T, identifier, password string) *servertest.Response {
	t.Helper()
	return b.h.Post(t, "/api/auth/password/login", "", map[string]string{"identifier": identifier, "password": password})
}

// loginFrom is login from another client address (a loopback IP, see servertest.Request.From).
func (b passwordBundle) loginFrom(t *testing.T, from, identifier, password string) *servertest.Response {
	t.Helper()
	return b.h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/auth/password/login", From: from,
		Body: map[string]string{"identifier": identifier, "password": password}})
}

// counted runs fn and returns how many key derivations it cost.
func (b passwordBundle) counted(fn func()) int64 {
	before := b.hasher.Derivations()
	fn()
	return b.hasher.Derivations() - before
}

func TestPasswordLogin(t *testing.T) {
	t.Parallel()
	t.Run("SignsInByEmailOrHandle", func(t *testing.T) {
		t.Parallel()
		b := setupPasswords(t)
		u := persisttest.User(t, b.h.Store, &persisttest.UserOpts{Email: persisttest.Ptr("nia@example.com"), Handle: persisttest.Ptr("nia")})
		b.enrol(t, u, "correct horse")
		for _, identifier := range []string{"nia@example.com", " NIA@Example.COM ", "nia", "@Nia", "NIA"} {
			r := b.login(t, identifier, "correct horse")
			r.RequireStatus(t, http.StatusOK)
			body := r.JSON(t)
			token := body["token"].(string)
			require.True(t, strings.HasPrefix(token, "sst_"), identifier)
			require.Equal(t, token, body["session"].(map[string]any)["token"])
			user := body["user"].(map[string]any)
			require.Equal(t, u.ID, user["id"])
			require.Equal(t, true, user["password_enrolled"])
			cookie := r.Header.Get("Set-Cookie")
			require.Contains(t, cookie, "cc_session="+token)
			require.Contains(t, cookie, "HttpOnly")
			me := b.h.Get(t, "/api/me", token)
			require.Equal(t, u.ID, meID(t, me))
			require.Equal(t, true, me.JSON(t)["user"].(map[string]any)["password_enrolled"])
			require.Equal(t, persist.MethodPassword, sessionMethod(t, b.h.Store, token))
		}
	})
	t.Run("EveryFailureLooksTheSameAndCostsOneDerivation", func(t *testing.T) {
		t.Parallel()
		b := setupPasswords(t)
		enrolled := persisttest.User(t, b.h.Store, &persisttest.UserOpts{Handle: persisttest.Ptr("enrolled")})
		b.enrol(t, enrolled, "correct horse")
		bare := persisttest.User(t, b.h.Store, &persisttest.UserOpts{Handle: persisttest.Ptr("bare")})
		ws := persisttest.Workspace(t, b.h.Store, enrolled.ID)
		persisttest.Bot(t, b.h.Store, enrolled, ws.ID, &persisttest.BotOpts{Handle: persisttest.Ptr("helper")})
		var bodies []string
		for name, try := range map[string][2]string{
			"WrongPassword":     {enrolled.Email, "wrong horse"},
			"UnknownIdentifier": {"nobody@example.com", "correct horse"},
			"UnknownHandle":     {"nobody", "correct horse"},
			"NoPasswordOnFile":  {bare.Email, "correct horse"},
			"BotHandle":         {"helper", "correct horse"},
			"EmptyPassword":     {enrolled.Email, ""},
			"EmptyIdentifier":   {"", "correct horse"},
		} {
			var r *servertest.Response
			require.EqualValues(t, 1, b.counted(func() { r = b.login(t, try[0], try[1]) }), name)
			r.RequireError(t, http.StatusUnauthorized, persist.CodeInvalidCredentials)
			require.Empty(t, r.Header.Get("Set-Cookie"), name)
			bodies = append(bodies, string(r.Body))
		}
		for _, body := range bodies {
			require.Equal(t, bodies[0], body, "one body for every failure")
		}
	})
	t.Run("OffIs501", func(t *testing.T) {
		t.Parallel()
		h := servertest.New(t)
		h.Post(t, "/api/auth/password/login", "", map[string]string{"identifier": "a@example.com", "password": "correct horse"}).
			RequireError(t, http.StatusNotImplemented, persist.CodeNotImplemented)
		u := h.NewUser(t)
		h.Post(t, "/api/auth/password/change", u.Token, map[string]string{"current_password": "correct horse", "new_password": "battery staple"}).
			RequireError(t, http.StatusNotImplemented, persist.CodeNotImplemented)
	})
	t.Run("JSONAndSameSiteOnly", func(t *testing.T) {
		t.Parallel()
		b := setupPasswords(t)
		u := persisttest.User(t, b.h.Store, nil)
		b.enrol(t, u, "correct horse")
		body := map[string]string{"identifier": u.Email, "password": "correct horse"}
		for header, code := range map[[2]string]persist.Code{
			{"Content-Type", "application/x-www-form-urlencoded"}: persist.CodeUnsupportedMediaType,
			{"Origin", "https://evil.example"}:                    persist.CodeCrossSite,
			{"Sec-Fetch-Site", "cross-site"}:                      persist.CodeCrossSite,
		} {
			var r *servertest.Response
			require.Zero(t, b.counted(func() {
				r = b.h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/auth/password/login", Body: body,
					Header: map[string]string{header[0]: header[1]}})
			}))
			require.Equal(t, code, persist.Code(r.JSON(t)["code"].(string)), header)
		}
		b.h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/auth/password/login", Body: body,
			Header: map[string]string{"Origin": b.h.URL, "Sec-Fetch-Site": "same-origin"}}).RequireStatus(t, http.StatusOK)
	})
}

// TestPasswordLoginBudgets pins the clock: ten attempts per account and client address an
// hour, twenty per client address in five minutes, as token buckets (a burst of the budget,
// refilled evenly over the window); a refused attempt costs no derivation and says when to come
// back (Retry-After).
func TestPasswordLoginBudgets(t *testing.T) {
	t.Parallel()
	t.Run("PerAccountAndAddress", func(t *testing.T) {
		t.Parallel()
		b := setupPasswords(t)
		u := persisttest.User(t, b.h.Store, &persisttest.UserOpts{Email: persisttest.Ptr("target@example.com"), Handle: persisttest.Ptr("target")})
		b.enrol(t, u, "correct horse")
		other := persisttest.User(t, b.h.Store, nil)
		b.enrol(t, other, "correct horse")
		const stranger = "127.0.0.2"
		for i := range 10 {
			// Every spelling of the identifier shares one budget.
			b.loginFrom(t, stranger, []string{"target@example.com", "TARGET@example.com"}[i%2], "wrong horse").
				RequireError(t, http.StatusUnauthorized, persist.CodeInvalidCredentials)
		}
		var r *servertest.Response
		require.Zero(t, b.counted(func() { r = b.loginFrom(t, stranger, "Target@Example.com", "correct horse") }))
		r.RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
		require.Equal(t, "360", r.Header.Get("Retry-After"), "one attempt back every 6 minutes")
		b.loginFrom(t, stranger, other.Email, "correct horse").RequireStatus(t, http.StatusOK)

		// The stranger's failures never lock the owner out: the owner's address has its own budget.
		b.login(t, "target@example.com", "correct horse").RequireStatus(t, http.StatusOK)
		for range 9 {
			b.login(t, "target@example.com", "correct horse").RequireStatus(t, http.StatusOK)
		}
		r = b.login(t, "target@example.com", "correct horse")
		r.RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
		require.Equal(t, "360", r.Header.Get("Retry-After"))

		// The budget refills one attempt every 6 minutes (ten an hour).
		b.clock.Advance(5 * time.Minute)
		r = b.loginFrom(t, stranger, "target@example.com", "correct horse")
		r.RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
		require.Equal(t, "60", r.Header.Get("Retry-After"))
		b.clock.Advance(time.Minute)
		b.loginFrom(t, stranger, "target@example.com", "correct horse").RequireStatus(t, http.StatusOK)
		b.loginFrom(t, stranger, "target@example.com", "correct horse").RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
		b.clock.Advance(time.Hour)
		for range 10 {
			b.loginFrom(t, stranger, "target@example.com", "correct horse").RequireStatus(t, http.StatusOK)
		}
	})
	t.Run("PerClientAddress", func(t *testing.T) {
		t.Parallel()
		b := setupPasswords(t)
		u := persisttest.User(t, b.h.Store, nil)
		b.enrol(t, u, "correct horse")
		for i := range 20 {
			b.login(t, "nobody-"+string(rune('a'+i))+"@example.com", "guess").
				RequireError(t, http.StatusUnauthorized, persist.CodeInvalidCredentials)
		}
		r := b.login(t, u.Email, "correct horse")
		r.RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
		require.Equal(t, "15", r.Header.Get("Retry-After"), "one attempt back every 15 seconds")
		b.loginFrom(t, "127.0.0.3", u.Email, "correct horse").RequireStatus(t, http.StatusOK)
		b.clock.Advance(5 * time.Minute)
		b.login(t, u.Email, "correct horse").RequireStatus(t, http.StatusOK)
	})
}

// TestPasswordLoginLosesRace: a login verifies the stored hash outside any transaction; when
// the password changes before its session is written, it gets the same 401 as a wrong password
// and its attempt does not count against the budgets.
func TestPasswordLoginLosesRace(t *testing.T) {
	t.Parallel()
	b := setupPasswords(t)
	u := persisttest.User(t, b.h.Store, nil)
	b.enrol(t, u, "old password")
	wrong := b.login(t, u.Email, "wrong horse")
	wrong.RequireError(t, http.StatusUnauthorized, persist.CodeInvalidCredentials)

	reached, release := b.gate.arm(1)
	done := make(chan *servertest.Response, 1)
	go func() { done <- b.login(t, u.Email, "old password") }()
	waitFor(t, reached, 1)
	// The old password has just been verified; now it is replaced.
	b.enrol(t, u, "new password")
	close(release)
	r := <-done
	r.RequireError(t, http.StatusUnauthorized, persist.CodeInvalidCredentials)
	require.Equal(t, string(wrong.Body), string(r.Body))
	require.Empty(t, r.Header.Get("Set-Cookie"))

	// Two attempts so far, one of them given back: eight more wrong ones and the right one make
	// ten, still within the identifier's budget.
	for range 8 {
		b.login(t, u.Email, "wrong horse").RequireError(t, http.StatusUnauthorized, persist.CodeInvalidCredentials)
	}
	b.login(t, u.Email, "new password").RequireStatus(t, http.StatusOK)
	b.login(t, u.Email, "new password").RequireError(t, http.StatusTooManyRequests, persist.CodeRateLimited)
}
