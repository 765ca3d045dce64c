package pushtest

import (
	"testing"

	"github.com/natterchat/natter/persist"
)

// Register registers d for userID through persist, as the registration route does once it has
// validated the subscription: under sessionID, so ending that session ends the registration.
func Register(t testing.TB, store *persist.Store, userID, sessionID string, d *Device, label string) persist.PushDevice {
	t.Helper()
	ctx := t.Context()
	dev, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.PushDevice, error) {
		return tx.PushDeviceRegister(ctx, persist.PushRegistrant{UserID: userID, SessionID: sessionID},
			persist.PushRegistration{UserID: userID, Subscription: persist.PushSubscription{Endpoint: d.Endpoint,
				P256dh: d.P256dh, Auth: d.Auth, Label: label}})
	})
	if err != nil {
		t.Fatalf("register the push device: %v", err)
	}
	return dev
}
