package admin

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist/pglocal"
)

// TestPrivateClusterErrorNamesTheFlags: pglocal speaks of a database URL; the command line names
// the flags that set one, and keeps the cause for errors.Is.
func TestPrivateClusterErrorNamesTheFlags(t *testing.T) {
	t.Parallel()
	err := privateClusterError(pglocal.ErrNoBinaries)
	require.ErrorIs(t, err, pglocal.ErrNoBinaries)
	require.ErrorContains(t, err, "--database-url")
	require.ErrorContains(t, err, "--data-dir")
}
