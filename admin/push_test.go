package admin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestAdminPushRotateKey(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	ctx := context.Background()
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	current := func() persist.PushKey {
		var k persist.PushKey
		require.NoError(t, store.WithTx(ctx, func(tx *persist.Tx) error {
			var ok bool
			var err error
			k, ok, err = tx.PushKeyCurrent(ctx)
			require.True(t, err != nil || ok, "a current key after rotation")
			return err
		}))
		return k
	}

	out, err := run(t, "admin", "push", "rotate-key", "--database-url", url)
	require.NoError(t, err)
	first := current()
	require.Contains(t, out, "new push key "+first.Fingerprint)
	require.Contains(t, out, "retired none")

	out, err = run(t, "admin", "push", "rotate-key", "--database-url", url)
	require.NoError(t, err)
	second := current()
	require.NotEqual(t, first.Fingerprint, second.Fingerprint)
	require.NotEqual(t, first.PrivateKey, second.PrivateKey)
	require.Contains(t, out, "retired "+first.Fingerprint)
}
