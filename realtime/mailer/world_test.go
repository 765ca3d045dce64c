package mailer_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/outbound/email"
	"github.com/natterchat/natter/outbound/email/emailtest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/mailer"
	"github.com/natterchat/natter/server"
)

func TestMain(m *testing.M) {
	// The tests wait out email delays of seconds. Measured alone on the loaded 2-core VM: 51 s at
	// go test's default of 2, 23 s at 8, 5-7 s of the binary's CPU either way.
	persisttest.WaitingTests(8)
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

const publicURL = "https://chat.example.com"

// Delays the tests give the choices: "2m" (the default) is short, "15m" long enough to act
// before it ends.
var testDelays = map[string]time.Duration{"2m": time.Second, "15m": 4 * time.Second, "1h": time.Hour}

// world is a running system with email to a real SMTP server, Ada and Bob in a workspace with
// #general.
type world struct {
	h        *servertest.Harness
	relay    *emailtest.Server
	sender   *email.Sender
	outcomes chan mailer.Outcome
	ada, bob servertest.Actor
	ws       persist.Workspace
	general  persist.Channel
}

func newWorld(t *testing.T, edit func(*mailer.Config)) *world {
	t.Helper()
	w := &world{relay: emailtest.New(t, emailtest.Options{Mode: emailtest.StartTLS}), outcomes: make(chan mailer.Outcome, 1024)}
	var err error
	w.sender, err = email.New(email.Config{URL: w.relay.URL(), From: "Natter <chat@example.com>", RootCAs: w.relay.RootCAs(), Timeout: 5 * time.Second})
	require.NoError(t, err)
	w.h = servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.Mail, c.PublicURL = w.sender, publicURL }),
		servertest.WithMailer(func(c *mailer.Config) {
			c.Delays, c.RetryBase, c.SendTimeout, c.Lease = testDelays, 100*time.Millisecond, 5*time.Second, 10*time.Second
			c.OnOutcome = func(o mailer.Outcome) { w.outcomes <- o }
			if edit != nil {
				edit(c)
			}
		}))
	w.ada = w.person(t, "Ada Lovelace", "ada")
	w.bob = w.person(t, "Bob Builder", "bob")
	w.ws = persisttest.Workspace(t, w.h.Store, w.ada.User.ID)
	persisttest.Member(t, w.h.Store, w.ws.ID, w.bob.User.ID, persist.RoleMember)
	w.general = persisttest.Channel(t, w.h.Store, persist.ActorFor(w.ada.User), w.ws.ID, "general")
	return w
}

func (w *world) person(t *testing.T, name, handle string) servertest.Actor {
	u := persisttest.User(t, w.h.Store, &persisttest.UserOpts{DisplayName: &name, Handle: &handle})
	return servertest.Actor{User: u, Token: persisttest.Session(t, w.h.Store, u.ID)}
}

// post posts body to a channel, DM or thread path as a and returns the message.
func (w *world) post(t *testing.T, a servertest.Actor, path, body string) map[string]any {
	t.Helper()
	r := w.h.Post(t, path, a.Token, map[string]any{"body": body})
	r.RequireStatus(t, http.StatusCreated)
	return r.JSON(t)["message"].(map[string]any)
}

func (w *world) inGeneral(t *testing.T, a servertest.Actor, body string) map[string]any {
	t.Helper()
	return w.post(t, a, "/api/channels/"+w.general.ID+"/messages", body)
}

func (w *world) dm(t *testing.T, a, b servertest.Actor) string {
	t.Helper()
	r := w.h.Post(t, "/api/dms", a.Token, map[string]any{"workspace_id": w.ws.ID, "member_ids": []string{b.User.ID}})
	require.Contains(t, []int{http.StatusOK, http.StatusCreated}, r.Status, "%s", r.Body)
	return r.JSON(t)["conversation"].(map[string]any)["id"].(string)
}

func (w *world) settings(t *testing.T, a servertest.Actor, settings map[string]any) {
	t.Helper()
	w.h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: a.Token,
		Body: map[string]any{"notification_settings": settings}}).RequireStatus(t, http.StatusOK)
}

// next waits for the next batch outcome.
func (w *world) next(t *testing.T) mailer.Outcome {
	t.Helper()
	select {
	case o := <-w.outcomes:
		return o
	case <-time.After(10 * time.Second):
		t.Fatalf("no email outcome")
		return mailer.Outcome{}
	}
}

// quiet checks that no outcome comes for a while: longer than the short delay and several
// polls, so a batch that was going to be sent would have been.
func (w *world) quiet(t *testing.T) {
	t.Helper()
	select {
	case o := <-w.outcomes:
		t.Fatalf("unexpected email outcome %+v", o)
	case <-time.After(2 * testDelays["2m"]):
	}
}
