package push_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/realtime/push"
	"github.com/natterchat/natter/realtime/push/pushtest"
)

// bobDevice is bob's only device as GET /api/me/push shows it.
type bobDevice struct {
	FailureCount               int
	LastFailure, Backoff, Last time.Time
}

func (w *pushWorld) bobDevice(t *testing.T) (bobDevice, bool) {
	t.Helper()
	st := w.status(t, w.bob, "")
	if len(st.Devices) == 0 {
		return bobDevice{}, false
	}
	require.Len(t, st.Devices, 1)
	d := st.Devices[0]
	at := func(ts *time.Time) time.Time {
		if ts == nil {
			return time.Time{}
		}
		return *ts
	}
	return bobDevice{FailureCount: d.FailureCount, LastFailure: at(d.LastFailureAt), Backoff: at(d.BackoffUntil),
		Last: at(d.LastSuccessAt)}, true
}

func answerAll(a pushtest.Answer) func(string) pushtest.Answer {
	return func(string) pushtest.Answer { return a }
}

func TestPushFailures(t *testing.T) {
	t.Parallel()

	for _, status := range []int{http.StatusNotFound, http.StatusGone} {
		t.Run(http.StatusText(status)+"DeletesTheDevice", func(t *testing.T) {
			t.Parallel()
			w := newPushWorld(t, nil)
			w.svc.Answer(answerAll(pushtest.Answer{Status: status}))
			w.inGeneral(t, "@bob hi")
			done := w.next(t)
			require.Equal(t, "gone", done.outcome.Result)
			require.Equal(t, status, done.outcome.Status)
			_, ok := w.bobDevice(t)
			require.False(t, ok)
		})
	}

	t.Run("BackoffScheduleAndRecovery", func(t *testing.T) {
		t.Parallel()
		clock := persisttest.NewClock()
		w := newPushWorld(t, nil, servertest.WithClock(clock))
		w.svc.Answer(answerAll(pushtest.Answer{Status: http.StatusServiceUnavailable}))
		w.inGeneral(t, "@bob one")
		done := w.next(t)
		require.Equal(t, "failed", done.outcome.Result)
		d, ok := w.bobDevice(t)
		require.True(t, ok, "a failure never deletes")
		require.Equal(t, 1, d.FailureCount)
		require.Equal(t, time.Minute, d.Backoff.Sub(d.LastFailure))

		w.inGeneral(t, "@bob while backed off")
		require.Equal(t, persist.PushDropBackoff, w.next(t).outcome.Dropped)

		clock.Advance(time.Minute)
		w.inGeneral(t, "@bob two")
		require.Equal(t, "failed", w.next(t).outcome.Result)
		d, _ = w.bobDevice(t)
		require.Equal(t, 2, d.FailureCount)
		require.Equal(t, 5*time.Minute, d.Backoff.Sub(d.LastFailure))

		clock.Advance(5 * time.Minute)
		w.svc.Answer(nil)
		w.inGeneral(t, "@bob three")
		require.Equal(t, "delivered", w.next(t).outcome.Result)
		d, _ = w.bobDevice(t)
		require.Zero(t, d.FailureCount, "a delivery ends the failure run")
		require.True(t, d.Backoff.IsZero())
		require.False(t, d.Last.IsZero())
	})

	t.Run("ReRegistrationEndsTheRun", func(t *testing.T) {
		t.Parallel()
		w := newPushWorld(t, nil)
		w.svc.Answer(answerAll(pushtest.Answer{Status: http.StatusInternalServerError}))
		w.inGeneral(t, "@bob one")
		require.Equal(t, "failed", w.next(t).outcome.Result)
		register(t, w.h.Store, w.bob, w.bobPhone, "phone")
		d, _ := w.bobDevice(t)
		require.Zero(t, d.FailureCount)
		require.True(t, d.Backoff.IsZero())
		w.svc.Answer(nil)
		w.inGeneral(t, "@bob two")
		require.Equal(t, "delivered", w.next(t).outcome.Result)
	})

	t.Run("RetryAfter", func(t *testing.T) {
		t.Parallel()
		clock := persisttest.NewClock()
		w := newPushWorld(t, nil, servertest.WithClock(clock))
		date := func(d time.Duration) func() string {
			return func() string { return clock.Now().Add(d).Format(http.TimeFormat) }
		}
		seconds := func(s string) func() string { return func() string { return s } }
		for _, tc := range []struct {
			status     int
			retryAfter func() string
			want       time.Duration
		}{
			{http.StatusTooManyRequests, seconds("7200"), 2 * time.Hour},        // first failure: longer than 1 minute
			{http.StatusServiceUnavailable, date(3 * time.Hour), 3 * time.Hour}, // second: longer than 5 minutes
			{http.StatusTooManyRequests, seconds("259200"), 24 * time.Hour},     // three days: at most one
			{http.StatusTooManyRequests, seconds("10"), 2 * time.Hour},          // fourth: the schedule wins
		} {
			w.svc.Answer(answerAll(pushtest.Answer{Status: tc.status, RetryAfter: tc.retryAfter()}))
			w.inGeneral(t, "@bob hi")
			done := w.next(t)
			require.Equal(t, "failed", done.outcome.Result)
			d, _ := w.bobDevice(t)
			require.Equal(t, tc.want, d.Backoff.Sub(d.LastFailure), "failure %d", d.FailureCount)
			clock.Advance(d.Backoff.Sub(d.LastFailure))
		}
	})

	t.Run("TimeoutBacksOff", func(t *testing.T) {
		t.Parallel()
		w := newPushWorld(t, func(c *push.Config) { c.SendTimeout = 200 * time.Millisecond })
		hold := make(chan struct{})
		t.Cleanup(func() { close(hold) })
		w.svc.Answer(answerAll(pushtest.Answer{Hold: hold}))
		w.inGeneral(t, "@bob hi")
		done := w.next(t)
		require.Equal(t, "failed", done.outcome.Result)
		require.Zero(t, done.outcome.Status)
		d, _ := w.bobDevice(t)
		require.Equal(t, 1, d.FailureCount)
	})

	t.Run("RedirectsAreNotFollowed", func(t *testing.T) {
		t.Parallel()
		w := newPushWorld(t, nil)
		elsewhere := w.svc.NewDevice(t)
		w.svc.Answer(func(path string) pushtest.Answer {
			if path == elsewhere.Endpoint[len(w.svc.URL):] {
				return pushtest.Answer{}
			}
			return pushtest.Answer{Status: http.StatusTemporaryRedirect, Location: elsewhere.Endpoint}
		})
		w.inGeneral(t, "@bob hi")
		done := w.next(t)
		require.Equal(t, "failed", done.outcome.Result)
		require.Equal(t, http.StatusTemporaryRedirect, done.outcome.Status)
		w.requireNothingSent(t)
	})

	t.Run("OutboundPolicyRefusesTheDeploymentsOwnNetwork", func(t *testing.T) {
		t.Parallel()
		// Registration admits the loopback test service; the deliverer keeps the strict default.
		w := newPushWorld(t, func(c *push.Config) { c.Policy = outbound.PublicOnly })
		w.inGeneral(t, "@bob hi")
		done := w.next(t)
		require.Equal(t, "failed", done.outcome.Result)
		require.Zero(t, done.outcome.Status, "no connection was made")
		w.requireNothingSent(t)
	})
}

func TestPushQueueOverflow(t *testing.T) {
	t.Parallel()
	w := newPushWorld(t, func(c *push.Config) { c.QueueSize = 1 })
	w.gated.Store(true)
	first := w.inGeneral(t, "@bob one")
	require.Equal(t, first, w.held(t).MessageID) // the only worker holds it
	second := w.inGeneral(t, "@bob two")         // fills the queue
	third := w.inGeneral(t, "@bob three")        // has no room
	done := w.next(t)
	require.Equal(t, push.DropQueueFull, done.outcome.Dropped)
	require.Equal(t, third, done.push.MessageID)
	require.EqualValues(t, 1, w.h.Push.Overflowed())
	w.gated.Store(false)
	w.release <- struct{}{}
	require.Equal(t, first, w.svc.Next(t).Payload.Tag)
	require.Equal(t, second, w.svc.Next(t).Payload.Tag)
}

func TestPushSweepAtStart(t *testing.T) {
	t.Parallel()
	w := newPushWorld(t, nil)
	w.h.Post(t, "/api/auth/logout", w.bob.Token, nil).RequireStatus(t, http.StatusOK)
	type sweep struct {
		r   persist.PushSweepResult
		err error
	}
	swept := make(chan sweep, 1)
	s, err := push.NewSweeper(push.SweeperConfig{Store: w.h.Store, Logger: slog.New(slog.DiscardHandler),
		OnSwept: func(r persist.PushSweepResult, err error) {
			select {
			case swept <- sweep{r, err}:
			default: // only the first sweep matters here
			}
		}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- s.Run(ctx) }()
	select {
	case got := <-swept:
		require.NoError(t, got.err)
		require.Equal(t, persist.PushSweepResult{SessionEnded: 1}, got.r, "the signed-out session's device")
	case <-time.After(10 * time.Second):
		t.Fatal("no sweep at start")
	}
	cancel()
	require.NoError(t, <-stopped)
}

// TestPushQueueHolds1024: SPEC §Limits, "Push queue: 1,024 pending pushes, in memory; overflow
// dropped and counted", with the deliverer's default size. The only worker holds one push at
// its gate; 11 people with 10 devices each are mentioned in 10 messages (1,100 pushes): 1,024
// wait in the queue and the other 76 are dropped.
func TestPushQueueHolds1024(t *testing.T) {
	t.Parallel()
	var queued atomic.Int64
	w := newPushWorld(t, func(c *push.Config) {
		c.OnQueued = func(push.Push) { queued.Add(1) }
		c.OnDone = func(push.Push, push.Outcome) {} // 1,100 outcomes would fill the world's channel
	})
	w.gated.Store(true)
	w.inGeneral(t, "@bob first")
	w.held(t)
	// Registered after the harness's, so it runs first: a failing check must not leave the
	// worker held while the deliverer shuts down.
	t.Cleanup(func() {
		w.gated.Store(false)
		select {
		case w.release <- struct{}{}:
		case <-time.After(5 * time.Second):
		}
	})
	people := []servertest.Actor{w.bob}
	for i := range 10 {
		p := w.person(t, fmt.Sprintf("Person %d", i), fmt.Sprintf("person%d", i))
		persisttest.Member(t, w.h.Store, w.ws.ID, p.User.ID, persist.RoleMember)
		people = append(people, p)
	}
	mentions := ""
	for i, p := range people {
		devices := 10
		if i == 0 {
			devices-- // bob's phone is registered already
		}
		for range devices {
			w.subscribe(t, p)
		}
		mentions += "@" + p.User.Handle + " "
	}
	for i := range 10 {
		w.inGeneral(t, fmt.Sprintf("%s %d", mentions, i))
	}
	require.Eventually(t, func() bool { return queued.Load()+w.h.Push.Overflowed() == 1+1100 },
		20*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 1+1024, queued.Load(), "the held push and a full queue of 1,024")
	require.EqualValues(t, 76, w.h.Push.Overflowed())
}
