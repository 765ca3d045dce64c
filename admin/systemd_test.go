package admin_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// systemdUnit is the unit file shipped for operators, quoted by docs/deployment.md.
const systemdUnit = "../deploy/systemd/natter.service"

// TestSystemdUnit: the unit the deployment page quotes is the file in the repository, word for
// word, and systemd-analyze finds nothing to say about it (an unknown key, a bad value).
func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	unit, err := os.ReadFile(systemdUnit)
	require.NoError(t, err)
	docs, err := os.ReadFile("../docs/deployment.md")
	require.NoError(t, err)
	require.Contains(t, string(docs), "```ini\n"+string(unit)+"```", "docs/deployment.md quotes deploy/systemd/natter.service whole")
	for _, want := range []string{"ExecStart=/usr/local/bin/natter serve\n", "ProtectSystem=strict\n", "StateDirectory=natter\n"} {
		require.Contains(t, string(unit), want)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: the unit is not verified")
	}
	// verify also wants ExecStart's program to exist: this test's own binary stands in for
	// /usr/local/bin/natter.
	self, err := os.Executable()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "natter.service")
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(unit), "/usr/local/bin/natter", self, 1)), 0o644))
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify has warnings")
}
