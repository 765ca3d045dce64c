package persist_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestMentions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body, handle string
		want         bool
	}{
		{"hi @ada", "ada", true},
		{"@ada, look", "ada", true},
		{"@ADA look", "ada", true},
		{"(@ada)", "ada", true},
		{"hi @ada_b", "ada", false},
		{"hi @adam", "ada", false},
		{"hi @ada-b", "ada", false},
		{"mail bob@ada.com", "ada", false},
		{"@@ada", "ada", false},
		{"ada", "ada", false},
		{"hi @ada", "", false},
		{"first @adam then @ada.", "ada", true},
		{"@ad", "ada", false},
		{"héllo @ada", "ada", true},
	} {
		require.Equal(t, tc.want, persist.Mentions(tc.body, tc.handle), "%q mentions @%s", tc.body, tc.handle)
	}
}

func TestPushSelects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		level, body string
		online      bool
		want        bool
	}{
		{persist.NotifyAll, "anything", false, true},
		{persist.NotifyAll, "hi @ada", false, true},
		{persist.NotifyMentions, "anything", false, false},
		{persist.NotifyMentions, "hi @ada", false, true},
		{persist.NotifyMuted, "hi @ada", false, false},
		{"unknown", "hi @ada", false, false},
		// Broadcasts (issue 30): @channel and @everyone address every reader, @here the online ones.
		{persist.NotifyMentions, "deploy at 5, @channel", false, true},
		{persist.NotifyMentions, "(@Everyone) look", false, true},
		{persist.NotifyMentions, "@here who is around?", true, true},
		{persist.NotifyMentions, "@here who is around?", false, false},
		{persist.NotifyMentions, "mail ops@here.example", true, false},
		{persist.NotifyMentions, "@channels is not a broadcast", false, false},
		{persist.NotifyMuted, "@channel", true, false},
	} {
		require.Equal(t, tc.want, persist.PushSelects(tc.level, tc.body, "ada", tc.online), "%s %q online=%v", tc.level, tc.body, tc.online)
	}
}

func TestPushBackoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		failure    int
		retryAfter time.Duration
		want       time.Duration
	}{
		{1, 0, time.Minute},
		{2, 0, 5 * time.Minute},
		{3, 0, 30 * time.Minute},
		{4, 0, 2 * time.Hour},
		{5, 0, 6 * time.Hour},
		{6, 0, 24 * time.Hour},
		{40, 0, 24 * time.Hour},
		{1, 30 * time.Second, time.Minute},  // a shorter Retry-After does not shorten the schedule
		{1, 2 * time.Hour, 2 * time.Hour},   // a longer one is honoured
		{3, 72 * time.Hour, 24 * time.Hour}, // up to a day
		{5, 23 * time.Hour, 23 * time.Hour}, // longer than 6h, under a day
		{0, 0, time.Minute},                 // defensive: the first entry
		{2, -time.Hour, 5 * time.Minute},    // a past date counts for nothing
		{6, 25 * time.Hour, 24 * time.Hour}, // the cap: at most 1 day
	} {
		require.Equal(t, tc.want, persist.PushBackoff(tc.failure, tc.retryAfter), "failure %d, Retry-After %s", tc.failure, tc.retryAfter)
	}
}

// pushWorld is a store with a pinned, movable clock and a current push key.
type pushWorld struct {
	store *persist.Store
	db    *pgx.Conn // direct, for crafting rows the API cannot make and reading what it hides
	mu    sync.Mutex
	now   time.Time
}

func newPushWorld(t *testing.T) *pushWorld {
	ctx := context.Background()
	w := &pushWorld{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	url := persisttest.URL(t)
	var err error
	w.store, err = persist.Open(ctx, persist.Config{URL: url, MaxConns: 4, Clock: func() time.Time {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.now
	}})
	require.NoError(t, err)
	t.Cleanup(w.store.Close)
	w.db, err = pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.db.Close(context.Background()) })
	w.ensureKey(t, "key-1")
	return w
}

func (w *pushWorld) at(ts time.Time) {
	w.mu.Lock()
	w.now = ts
	w.mu.Unlock()
}

func (w *pushWorld) ensureKey(t *testing.T, fp string) {
	ctx := context.Background()
	_, err := persist.WithTxV(ctx, w.store, func(tx *persist.Tx) (persist.PushKey, error) {
		return tx.PushKeyEnsure(ctx, persist.PushKey{Fingerprint: fp, PublicKey: "pub-" + fp, PrivateKey: "priv-" + fp})
	})
	require.NoError(t, err)
}

func (w *pushWorld) rotate(t *testing.T, fp string) {
	ctx := context.Background()
	_, err := persist.WithTxV(ctx, w.store, func(tx *persist.Tx) (string, error) {
		return tx.PushKeyRotate(ctx, persist.PushKey{Fingerprint: fp, PublicKey: "pub-" + fp, PrivateKey: "priv-" + fp})
	})
	require.NoError(t, err)
}

// register registers endpoint for who and returns the device's id and registration time.
func (w *pushWorld) register(t *testing.T, who persist.PushRegistrant, endpoint string) (string, time.Time) {
	ctx := context.Background()
	_, err := persist.WithTxV(ctx, w.store, func(tx *persist.Tx) (persist.PushDevice, error) {
		return tx.PushDeviceRegister(ctx, who, persist.PushRegistration{UserID: who.UserID,
			Subscription: persist.PushSubscription{Endpoint: endpoint, P256dh: "p", Auth: "a", Label: "test"}})
	})
	require.NoError(t, err)
	return w.device(t, endpoint)
}

// device finds a device's id and version by endpoint; "" when it is gone.
func (w *pushWorld) device(t *testing.T, endpoint string) (string, time.Time) {
	var id string
	var version time.Time
	err := w.db.QueryRow(context.Background(), `SELECT id, registered_at FROM push_devices WHERE endpoint = $1`,
		endpoint).Scan(&id, &version)
	if err == pgx.ErrNoRows {
		return "", time.Time{}
	}
	require.NoError(t, err)
	return id, version
}

func (w *pushWorld) fail(t *testing.T, endpoint string) {
	ctx := context.Background()
	id, version := w.device(t, endpoint)
	_, err := persist.WithTxV(ctx, w.store, func(tx *persist.Tx) (time.Time, error) {
		return tx.PushDeviceFailed(ctx, id, version, 0)
	})
	require.NoError(t, err)
}

func (w *pushWorld) sweep(t *testing.T) persist.PushSweepResult {
	ctx := context.Background()
	r, err := persist.WithTxV(ctx, w.store, func(tx *persist.Tx) (persist.PushSweepResult, error) { return tx.PushSweep(ctx) })
	require.NoError(t, err)
	return r
}
