package admin_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server/passwordhash"
)

// runWithInput executes the command line in-process with stdin.
func runWithInput(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := admin.RunWithInput(t.Context(), append([]string{"natter"}, args...), strings.NewReader(stdin), &out, &errOut)
	return out.String(), err
}

func TestAdminPassword(t *testing.T) {
	t.Parallel()
	url := persisttest.URL(t)
	ctx := context.Background()
	store, err := persist.Open(ctx, persist.Config{URL: url, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	u := persisttest.User(t, store, &persisttest.UserOpts{Email: persisttest.Ptr("nia@example.com")})
	credential := func() persist.PasswordCredential {
		c, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.PasswordCredential, error) {
			return tx.PasswordLookup(ctx, "nia@example.com")
		})
		require.NoError(t, err)
		require.Equal(t, u.ID, c.UserID)
		return c
	}

	for _, secret := range []string{"", "short\n", strings.Repeat("x", 257)} {
		_, err := runWithInput(t, secret, "admin", "password", "set", "--database-url", url, "--email", "nia@example.com")
		require.ErrorContains(t, err, "8 to 256", "%q", secret)
	}
	require.Empty(t, credential().Hash, "nothing was set")
	_, err = runWithInput(t, "correct horse\n", "admin", "password", "set", "--database-url", url, "--email", "nobody@example.com")
	require.ErrorContains(t, err, "no account has the email nobody@example.com; let the person in first with natter admin member add")

	out, err := runWithInput(t, "correct horse\r\n", "admin", "password", "set", "--database-url", url, "--email", "NIA@example.com")
	require.NoError(t, err)
	require.Contains(t, out, u.ID)
	c := credential()
	require.True(t, strings.HasPrefix(c.Hash, "$argon2id$v=19$m=65536,t=3,p=4$"), "the default parameters: %s", c.Hash)
	hasher, err := passwordhash.New(passwordhash.Config{})
	require.NoError(t, err)
	ok, err := hasher.Verify(ctx, c.Hash, "correct horse")
	require.NoError(t, err)
	require.True(t, ok, "the trailing newline is not part of the password")

	out, err = runWithInput(t, "", "admin", "password", "clear", "--database-url", url, "--email", "nia@example.com")
	require.NoError(t, err)
	require.Contains(t, out, u.ID)
	require.Empty(t, credential().Hash)
	_, err = runWithInput(t, "", "admin", "password", "clear", "--database-url", url, "--email", "nobody@example.com")
	require.ErrorContains(t, err, "not found")
}
