package persist_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// TestPushSweep runs the dead-device rules against a pinned clock, one rule per subtest, each
// with the cases just inside and just outside it.
func TestPushSweep(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	t.Run("DeadRun", func(t *testing.T) {
		t.Parallel()
		w := newPushWorld(t)
		u := persisttest.User(t, w.store, nil)
		dev := persist.PushRegistrant{UserID: u.ID, Dev: true} // no session: rule (c) stays out of it
		w.at(t0)
		for _, e := range []string{"https://push.example/dead", "https://push.example/stale-refusal",
			"https://push.example/short-run", "https://push.example/delivered-between"} {
			w.register(t, dev, e)
		}
		w.fail(t, "https://push.example/dead")
		w.fail(t, "https://push.example/stale-refusal")
		w.fail(t, "https://push.example/delivered-between")
		w.at(t0.Add(day))
		id, version := w.device(t, "https://push.example/delivered-between")
		require.NoError(t, w.store.WithTx(context.Background(), func(tx *persist.Tx) error {
			return tx.PushDeviceDelivered(context.Background(), id, version)
		}))
		w.at(t0.Add(2 * day))
		w.fail(t, "https://push.example/short-run") // its run begins here
		w.at(t0.Add(6 * day))
		w.fail(t, "https://push.example/stale-refusal") // latest refusal: more than a day before the sweep
		w.at(t0.Add(7*day + time.Hour))
		w.fail(t, "https://push.example/dead")
		w.fail(t, "https://push.example/short-run")
		w.fail(t, "https://push.example/delivered-between") // a new run, one hour old

		w.at(t0.Add(7*day + 2*time.Hour))
		r := w.sweep(t)
		require.Equal(t, persist.PushSweepResult{DeadRun: 1}, r)
		gone, _ := w.device(t, "https://push.example/dead")
		require.Empty(t, gone, "a week of refusals with nothing delivered")
		for _, e := range []string{"https://push.example/stale-refusal", "https://push.example/short-run",
			"https://push.example/delivered-between"} {
			id, _ := w.device(t, e)
			require.NotEmpty(t, id, e)
		}
	})

	t.Run("RetiredKey", func(t *testing.T) {
		t.Parallel()
		w := newPushWorld(t)
		u := persisttest.User(t, w.store, nil)
		dev := persist.PushRegistrant{UserID: u.ID, Dev: true}
		w.at(t0)
		w.register(t, dev, "https://push.example/never-came-back")
		w.register(t, dev, "https://push.example/came-back")
		w.register(t, dev, "https://push.example/no-key-on-file")
		_, err := w.db.Exec(context.Background(), `UPDATE push_devices SET key_fingerprint = NULL WHERE endpoint = $1`,
			"https://push.example/no-key-on-file")
		require.NoError(t, err)
		w.at(t0.Add(day))
		w.rotate(t, "key-2")
		w.at(t0.Add(2 * day))
		w.register(t, dev, "https://push.example/came-back")

		w.at(t0.Add(day + 30*day - time.Minute))
		require.Zero(t, w.sweep(t).Total(), "29 days and 23 hours after the rotation")
		w.at(t0.Add(day + 30*day))
		require.Equal(t, persist.PushSweepResult{RetiredKey: 1}, w.sweep(t))
		gone, _ := w.device(t, "https://push.example/never-came-back")
		require.Empty(t, gone)
		for _, e := range []string{"https://push.example/came-back", "https://push.example/no-key-on-file"} {
			id, _ := w.device(t, e)
			require.NotEmpty(t, id, e)
		}
	})

	t.Run("SessionEnded", func(t *testing.T) {
		t.Parallel()
		w := newPushWorld(t)
		ctx := context.Background()
		u := persisttest.User(t, w.store, nil)
		w.at(t0)
		session := func() (persist.Session, string) {
			s, raw, err := func() (persist.Session, string, error) {
				var s persist.Session
				var raw string
				err := w.store.WithTx(ctx, func(tx *persist.Tx) error {
					var err error
					s, raw, err = tx.SessionCreate(ctx, u.ID, persist.MethodMagicLink)
					return err
				})
				return s, raw, err
			}()
			require.NoError(t, err)
			return s, raw
		}
		live, _ := session()
		revoked, revokedToken := session()
		w.at(t0.Add(20 * day))
		renewed, _ := session()
		w.at(t0)
		w.register(t, persist.PushRegistrant{UserID: u.ID, SessionID: live.ID}, "https://push.example/expired")
		w.register(t, persist.PushRegistrant{UserID: u.ID, SessionID: revoked.ID}, "https://push.example/signed-out")
		w.register(t, persist.PushRegistrant{UserID: u.ID, SessionID: "ses_missing"}, "https://push.example/missing")
		w.register(t, persist.PushRegistrant{UserID: u.ID, SessionID: renewed.ID}, "https://push.example/live")
		w.register(t, persist.PushRegistrant{UserID: u.ID, Dev: true}, "https://push.example/dev")
		require.NoError(t, w.store.WithTx(ctx, func(tx *persist.Tx) error { return tx.SessionRevoke(ctx, revokedToken) }))

		require.Equal(t, persist.PushSweepResult{SessionEnded: 2}, w.sweep(t), "signed out, and never existed")
		w.at(live.ExpiresAt)
		require.Equal(t, persist.PushSweepResult{SessionEnded: 1}, w.sweep(t), "expired")
		for _, e := range []string{"https://push.example/live", "https://push.example/dev"} {
			id, _ := w.device(t, e)
			require.NotEmpty(t, id, e)
		}
	})
}

// TestPushWriteGuards checks the order and effect of the push write guards: no key pair →
// push_disabled; no session outside loopback development → forbidden; another account →
// push_account_mismatch with nothing written; then the subscription's own validity.
func TestPushWriteGuards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := persisttest.NewStore(t)
	u := persisttest.User(t, store, nil)
	other := persisttest.User(t, store, nil)
	sub := persist.PushSubscription{Endpoint: "https://push.example/a", P256dh: "p", Auth: "a"}
	register := func(who persist.PushRegistrant, in persist.PushRegistration) error {
		return store.WithTx(ctx, func(tx *persist.Tx) error {
			_, err := tx.PushDeviceRegister(ctx, who, in)
			return err
		})
	}
	code := func(err error) persist.Code {
		e, ok := persist.ErrorOf(err)
		require.True(t, ok, "%v", err)
		return e.Code
	}
	session := persist.PushRegistrant{UserID: u.ID, SessionID: "ses_x"}
	require.Equal(t, persist.CodePushDisabled, code(register(session, persist.PushRegistration{UserID: u.ID, Subscription: sub})))

	_, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.PushKey, error) {
		return tx.PushKeyEnsure(ctx, persist.PushKey{Fingerprint: "k", PublicKey: "pub", PrivateKey: "priv"})
	})
	require.NoError(t, err)
	require.Equal(t, persist.CodePushDisabled, code(register(session, persist.PushRegistration{UserID: u.ID, Subscription: sub, Disabled: true})))
	require.Equal(t, persist.CodeForbidden, code(register(persist.PushRegistrant{UserID: u.ID},
		persist.PushRegistration{UserID: u.ID, Subscription: sub})), "no session and not the development identity")
	require.Equal(t, persist.CodePushAccountMismatch, code(register(session, persist.PushRegistration{UserID: other.ID, Subscription: sub})))
	require.Equal(t, persist.CodeInvalidRequest, code(register(session, persist.PushRegistration{UserID: u.ID, Subscription: sub,
		Invalid: persist.Invalid("bad")})))
	st, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.PushStatus, error) {
		return tx.PushStatusGet(ctx, u.ID, "", false)
	})
	require.NoError(t, err)
	require.Empty(t, st.Devices, "nothing was written")
	require.NoError(t, register(persist.PushRegistrant{UserID: u.ID, Dev: true}, persist.PushRegistration{UserID: u.ID, Subscription: sub}))
}
