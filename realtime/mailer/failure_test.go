package mailer_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/realtime/mailer"
)

func TestOneClickUnsubscribe(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	w.inGeneral(t, w.ada, "@bob hello")
	require.Equal(t, "sent", w.next(t).Result)
	header := w.relay.Wait(t, 1, 0)[0].Header.Get("List-Unsubscribe")
	target := strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(header, "<"), ">"), publicURL)

	// Opening the link (or a scanner fetching it) changes nothing; it offers the button.
	page := w.h.Get(t, target, "")
	page.RequireStatus(t, http.StatusOK)
	require.Contains(t, string(page.Body), `<form method="post"`)
	enabled := func() any {
		return w.h.Get(t, "/api/me", w.bob.Token).JSON(t)["user"].(map[string]any)["notification_settings"].(map[string]any)["email_enabled"]
	}
	require.Equal(t, true, enabled())

	// The mail client's one-click POST (RFC 8058), without any sign-in.
	r := w.h.Do(t, servertest.Request{Method: http.MethodPost, Path: target, Body: "List-Unsubscribe=One-Click",
		Header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}})
	r.RequireStatus(t, http.StatusOK)
	require.Contains(t, string(r.Body), w.bob.User.Email)
	require.Equal(t, false, enabled())

	w.inGeneral(t, w.ada, "@bob are you still there?")
	w.quiet(t)
	require.Len(t, w.relay.Mails(), 1)

	w.h.Do(t, servertest.Request{Method: http.MethodPost, Path: "/api/email/unsubscribe?token=eun_unknown"}).
		RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	w.h.Get(t, "/api/email/unsubscribe", "").RequireError(t, http.StatusNotFound, persist.CodeNotFound)
}

func TestTemporaryRefusalIsRetried(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	w.relay.Refuse(451)
	w.inGeneral(t, w.ada, "@bob again")
	o := w.next(t)
	require.Equal(t, "retry", o.Result)
	require.Contains(t, o.Reason, "451")
	require.Equal(t, "sent", w.next(t).Result)
	require.Len(t, w.relay.Mails(), 1)
	require.Equal(t, 2, w.relay.Attempts())
}

func TestPermanentRefusalIsNotRetried(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	w.relay.Refuse(550)
	w.inGeneral(t, w.ada, "@bob once")
	o := w.next(t)
	require.Equal(t, "failed", o.Result)
	require.Contains(t, o.Reason, "550")
	w.quiet(t)
	require.Equal(t, 1, w.relay.Attempts())
	require.Empty(t, w.relay.Mails())
}

func TestTemporaryRefusalsEnd(t *testing.T) {
	t.Parallel()
	w := newWorld(t, func(c *mailer.Config) { c.MaxAttempts = 2 })
	w.relay.Refuse(421, 451)
	w.inGeneral(t, w.ada, "@bob twice refused")
	require.Equal(t, "retry", w.next(t).Result)
	require.Equal(t, "failed", w.next(t).Result)
	w.quiet(t)
	require.Equal(t, 2, w.relay.Attempts())
}

// TestOneEmailAcrossReplicasAndRestart runs a second deliverer beside the harness's, on the same
// database and NATS server, as a second replica does; then replaces it with a third, as a
// restart does. Each batch is emailed once.
func TestOneEmailAcrossReplicasAndRestart(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	replica := func(name string) context.CancelFunc {
		nc, err := w.h.Embed.Connect(name)
		require.NoError(t, err)
		d, err := mailer.New(mailer.Config{Store: w.h.Store, NATS: nc, Sender: w.sender, PublicURL: publicURL,
			Delays: testDelays, DiscoverInterval: 50 * time.Millisecond, PollInterval: 20 * time.Millisecond,
			SendTimeout: 5 * time.Second, Lease: 10 * time.Second, OnOutcome: func(o mailer.Outcome) { w.outcomes <- o }})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = d.Run(ctx) }()
		stop := func() { cancel(); <-done; nc.Close() }
		t.Cleanup(stop)
		return stop
	}
	stopSecond := replica("second replica")
	w.settings(t, w.bob, map[string]any{"email_delay": "15m"}) // room to post everything within one batch
	dm := w.dm(t, w.ada, w.bob)
	root := w.inGeneral(t, w.bob, "release notes?")
	for i := range 3 {
		w.inGeneral(t, w.ada, "@bob mention "+string(rune('a'+i)))
		w.post(t, w.ada, "/api/dms/"+dm+"/messages", "direct "+string(rune('a'+i)))
		w.post(t, w.ada, "/api/messages/"+root["id"].(string)+"/thread/replies", "reply "+string(rune('a'+i)))
	}
	for range 3 {
		require.Equal(t, "sent", w.next(t).Result)
	}
	w.quiet(t)
	require.Len(t, w.relay.Mails(), 3, "three conversations, three emails, across two replicas")

	stopSecond()
	replica("restarted replica")
	w.inGeneral(t, w.ada, "@bob after the restart")
	w.inGeneral(t, w.ada, "@bob and once more")
	require.Equal(t, "sent", w.next(t).Result)
	w.quiet(t)
	mails := w.relay.Mails()
	require.Len(t, mails, 4)
	require.Contains(t, mails[3].Text, "after the restart")
	require.Contains(t, mails[3].Text, "once more")
}
