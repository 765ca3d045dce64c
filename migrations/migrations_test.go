package migrations

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReleasedMigrationsUnchanged fails when a migration listed in released.sha256 changes or
// disappears, and when a new migration is not yet listed. Released migrations are never edited:
// add a new file and list it.
func TestReleasedMigrationsUnchanged(t *testing.T) {
	t.Parallel()
	f, err := os.Open("released.sha256")
	require.NoError(t, err)
	defer f.Close()
	released := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(strings.TrimSpace(sc.Text()), "  ")
		if !ok {
			continue
		}
		released[name] = sum
	}
	require.NoError(t, sc.Err())
	all, err := All()
	require.NoError(t, err)
	present := map[string]bool{}
	for _, m := range all {
		present[m.Name] = true
		sum, ok := released[m.Name]
		require.True(t, ok, "%s is not listed in released.sha256: add `sha256sum %s >> released.sha256`", m.Name, m.Name)
		require.Equal(t, sum, m.Checksum, "%s changed after release: migrations are append-only, add a new file", m.Name)
	}
	for name := range released {
		require.True(t, present[name], "released migration %s was removed", name)
	}
}

func TestAllOrdered(t *testing.T) {
	t.Parallel()
	all, err := All()
	require.NoError(t, err)
	require.NotEmpty(t, all)
	for i := 1; i < len(all); i++ {
		require.Less(t, all[i-1].Version, all[i].Version)
	}
}
