package persist_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func TestNormalizeHandle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"@Alice", "alice", true},
		{"bob_smith-2", "bob_smith-2", true},
		{"", "", true},
		{"  @Zed  ", "zed", true},
		{"a", "", false},
		{"@" + string(make([]byte, 0)) + "abcdefghijabcdefghijabcdefghijabc", "", false},
		{"has space", "", false},
		{"dot.ted", "", false},
		{"ünï", "", false},
	} {
		got, err := persist.NormalizeHandle(tc.in)
		if !tc.ok {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

func TestUserUpdate(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*persist.Store, persist.User) {
		store := persisttest.NewStore(t)
		return store, persisttest.User(t, store, &persisttest.UserOpts{Email: persisttest.Ptr("Ann@Example.com")})
	}
	update := func(t *testing.T, store *persist.Store, id string, p persist.UserPatch) (persist.User, error) {
		ctx := context.Background()
		return persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.User, error) { return tx.UserUpdate(ctx, id, p) })
	}

	t.Run("OmittedFieldsUnchanged", func(t *testing.T) {
		t.Parallel()
		store, u := setup(t)
		got, err := update(t, store, u.ID, persist.UserPatch{Handle: persisttest.Ptr("@Ann")})
		require.NoError(t, err)
		require.Equal(t, "ann", got.Handle)
		require.Equal(t, u.DisplayName, got.DisplayName)
		require.Equal(t, "ann@example.com", got.Email)
	})

	t.Run("HandleUniqueCaseInsensitive", func(t *testing.T) {
		t.Parallel()
		store, u := setup(t)
		other := persisttest.User(t, store, nil)
		_, err := update(t, store, other.ID, persist.UserPatch{Handle: persisttest.Ptr("taken")})
		require.NoError(t, err)
		_, err = update(t, store, u.ID, persist.UserPatch{Handle: persisttest.Ptr("@TAKEN")})
		e, ok := persist.ErrorOf(err)
		require.True(t, ok, "%v", err)
		require.Equal(t, persist.CodeConflict, e.Code)
	})

	t.Run("AvatarFallbackRestoredOnClear", func(t *testing.T) {
		t.Parallel()
		store, u := setup(t)
		fallback := u.Avatar()
		require.Contains(t, fallback, "gravatar.com/avatar/")
		got, err := update(t, store, u.ID, persist.UserPatch{AvatarURL: persisttest.Ptr("https://img.example/a.png")})
		require.NoError(t, err)
		require.Equal(t, "https://img.example/a.png", got.Avatar())
		got, err = update(t, store, u.ID, persist.UserPatch{AvatarURL: persisttest.Ptr("")})
		require.NoError(t, err)
		require.Equal(t, fallback, got.Avatar())
		_, err = update(t, store, u.ID, persist.UserPatch{AvatarURL: persisttest.Ptr("javascript:alert(1)")})
		require.Error(t, err)
	})

	t.Run("PushoverKeyRules", func(t *testing.T) {
		t.Parallel()
		store, u := setup(t)
		_, err := update(t, store, u.ID, persist.UserPatch{PushoverUserKey: persisttest.Ptr("short")})
		require.Error(t, err)
		_, err = update(t, store, u.ID, persist.UserPatch{PushoverEnabled: persisttest.Ptr(true)})
		require.Error(t, err, "enabling needs a key")
		key := "abcdefghijABCDEFGHIJ0123456789"
		got, err := update(t, store, u.ID, persist.UserPatch{PushoverEnabled: persisttest.Ptr(true), PushoverUserKey: &key})
		require.NoError(t, err)
		require.True(t, got.PushoverEnabled)
		require.Equal(t, key, got.PushoverUserKey)
	})
}
