package delivery

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/streams"
	"github.com/natterchat/natter/streams/streamstest"
)

// TestDeliveryResumesAfterACrash: the process delivering a subscription dies while a callback
// is under way (its NATS connection ends with the event unacknowledged); a restarted process
// (a new Deliverer on a new connection) receives that event again within seconds, not after a
// minute's ack wait, and delivers what follows; an event acknowledged before the crash is never
// sent again. The wait for the redelivery is bounded at 30 s, half the ack wait this replaced.
func TestDeliveryResumesAfterACrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	emb, nc := streamstest.Embedded(t)
	store := persisttest.NewStore(t, persisttest.WithCommitHook(streams.WakeRelay(nc)))
	owner := persisttest.User(t, store, nil)
	ws := persisttest.Workspace(t, store, owner.ID)
	general := persisttest.Channel(t, store, persist.ActorFor(owner), ws.ID, "general")
	bot, _ := persisttest.Bot(t, store, owner, ws.ID, nil)

	// The receiver answers 200, except the first call for the event marked to hang: that one it
	// holds until the test ends, as a callback slower than the crash.
	type call struct{ eventID string }
	calls := make(chan call, 16)
	release := make(chan struct{})
	var mu sync.Mutex
	hang, hung := "", false
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var d struct {
			Event struct {
				ID string `json:"id"`
			} `json:"event"`
		}
		_ = json.Unmarshal(body, &d)
		calls <- call{d.Event.ID}
		mu.Lock()
		hold := d.Event.ID == hang && !hung
		hung = hung || hold
		mu.Unlock()
		if hold {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(recv.Close)
	t.Cleanup(func() { close(release) })

	_, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.EventSubscription, error) {
		inst, err := tx.AppInstallationCreate(ctx, persist.ActorFor(owner), ws.ID,
			persist.AppInstallationCreateParams{AppSlug: "a", BotUserID: bot.ID})
		if err != nil {
			return persist.EventSubscription{}, err
		}
		return tx.EventSubscriptionCreate(ctx, persist.ActorFor(owner), ws.ID, persist.EventSubscriptionCreateParams{
			AppInstallationID: inst.Installation.ID, EventTypes: []string{"*"}, CallbackURL: recv.URL})
	})
	require.NoError(t, err)

	logger := slog.New(slog.DiscardHandler)
	relay, err := streams.NewRelay(streams.RelayConfig{Store: store, NATS: nc, Logger: logger, PollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	run := func(nc interface{ Close() }, d *Deliverer) (stop func()) {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = d.Run(rctx)
		}()
		return func() {
			cancel()
			<-done
			nc.Close()
		}
	}
	stopRelay := func() func() {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = relay.Run(rctx)
		}()
		return func() { cancel(); <-done }
	}()
	t.Cleanup(stopRelay)

	loopback := func(a netip.Addr) bool { return a.Unmap().IsLoopback() }
	deliverer := func(name string) (*Deliverer, interface{ Close() }, chan persist.EventDeliveryAttempt) {
		conn, err := emb.Connect(name)
		require.NoError(t, err)
		// The callback may take longer than the test: the crashed process never finishes it.
		client, err := outbound.NewCallbackClient(outbound.CallbackConfig{AllowAddr: loopback, Timeout: 5 * time.Minute})
		require.NoError(t, err)
		attempts := make(chan persist.EventDeliveryAttempt, 16)
		d, err := New(Config{Store: store, NATS: conn, Callbacks: client, Logger: logger, SyncInterval: 50 * time.Millisecond,
			OnAttempt: func(a persist.EventDeliveryAttempt) { attempts <- a }})
		require.NoError(t, err)
		return d, conn, attempts
	}
	post := func(body string) string {
		res, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.MessageCreated, error) {
			return tx.MessageCreate(ctx, persist.ActorFor(owner), persist.Place{ChannelID: general.ID},
				persist.MessageCreateParams{Body: body})
		})
		require.NoError(t, err)
		return res.Event.ID
	}
	next := func(within time.Duration) call {
		t.Helper()
		select {
		case c := <-calls:
			return c
		case <-time.After(within):
			t.Fatalf("no delivery within %s", within)
			return call{}
		}
	}

	first, firstConn, firstAttempts := deliverer("first")
	crash := run(firstConn, first)
	acked := post("acknowledged before the crash")
	require.Equal(t, acked, next(10*time.Second).eventID)
	<-firstAttempts

	mu.Lock()
	hang = post("under way at the crash")
	mu.Unlock()
	require.Equal(t, hang, next(10*time.Second).eventID)
	firstConn.Close() // the crash: no acknowledgement and no word from this process any more

	second, secondConn, secondAttempts := deliverer("second")
	stopSecond := run(secondConn, second)
	t.Cleanup(stopSecond)
	require.Equal(t, hang, next(30*time.Second).eventID, "the event under way at the crash comes again, soon")
	a := <-secondAttempts
	require.Equal(t, hang, a.EventID)
	require.Equal(t, 200, a.ResponseStatus)
	after := post("after the restart")
	require.Equal(t, after, next(10*time.Second).eventID, "and the log goes on; the acknowledged event never came again")
	crash()
	select {
	case c := <-calls:
		t.Fatalf("an unexpected delivery of %s", c.eventID)
	default:
	}
}

// TestSlowCallbackKeepsItsClaim: a callback slower than the ack wait is not handed to another
// replica meanwhile: its replica keeps the claim while it works, so the event is sent once.
func TestSlowCallbackKeepsItsClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	emb, nc := streamstest.Embedded(t)
	store := persisttest.NewStore(t, persisttest.WithCommitHook(streams.WakeRelay(nc)))
	owner := persisttest.User(t, store, nil)
	ws := persisttest.Workspace(t, store, owner.ID)
	general := persisttest.Channel(t, store, persist.ActorFor(owner), ws.ID, "general")
	bot, _ := persisttest.Bot(t, store, owner, ws.ID, nil)
	const ackWait = 100 * time.Millisecond
	calls := make(chan struct{}, 16)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		calls <- struct{}{}
		<-time.After(10 * ackWait) // a slow integrator
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(recv.Close)
	_, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.EventSubscription, error) {
		inst, err := tx.AppInstallationCreate(ctx, persist.ActorFor(owner), ws.ID,
			persist.AppInstallationCreateParams{AppSlug: "a", BotUserID: bot.ID})
		if err != nil {
			return persist.EventSubscription{}, err
		}
		return tx.EventSubscriptionCreate(ctx, persist.ActorFor(owner), ws.ID, persist.EventSubscriptionCreateParams{
			AppInstallationID: inst.Installation.ID, EventTypes: []string{"*"}, CallbackURL: recv.URL})
	})
	require.NoError(t, err)
	logger := slog.New(slog.DiscardHandler)
	relay, err := streams.NewRelay(streams.RelayConfig{Store: store, NATS: nc, Logger: logger, PollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Add(1)
	go func() { defer wg.Done(); _ = relay.Run(rctx) }()
	attempts := make(chan persist.EventDeliveryAttempt, 16)
	for _, name := range []string{"one", "two"} { // two replicas share the consumer
		conn, err := emb.Connect(name)
		require.NoError(t, err)
		t.Cleanup(conn.Close)
		client, err := outbound.NewCallbackClient(outbound.CallbackConfig{AllowAddr: func(a netip.Addr) bool { return a.Unmap().IsLoopback() }})
		require.NoError(t, err)
		d, err := New(Config{Store: store, NATS: conn, Callbacks: client, Logger: logger, SyncInterval: 50 * time.Millisecond,
			AckWait: ackWait, OnAttempt: func(a persist.EventDeliveryAttempt) { attempts <- a }})
		require.NoError(t, err)
		wg.Add(1)
		go func() { defer wg.Done(); _ = d.Run(rctx) }()
	}
	_, err = persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.MessageCreated, error) {
		return tx.MessageCreate(ctx, persist.ActorFor(owner), persist.Place{ChannelID: general.ID}, persist.MessageCreateParams{Body: "slow"})
	})
	require.NoError(t, err)
	select {
	case a := <-attempts:
		require.Equal(t, 200, a.ResponseStatus)
	case <-time.After(30 * time.Second):
		t.Fatal("no attempt stored")
	}
	require.Len(t, calls, 1, "the event was sent once")
}
