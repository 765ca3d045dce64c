package persist_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
)

func TestCleanFilename(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
	}{
		{"Plain", "cat.png", "cat.png"},
		{"UnixPath", "../../etc/passwd", "passwd"},
		{"WindowsPath", `C:\Users\me\report.pdf`, "report.pdf"},
		{"ControlCharacters", "evil\r\nname\x00.txt", "evilname.txt"},
		{"Spaces", "  spaced out.txt  ", "spaced out.txt"},
		{"Unicode", "résumé 履歴書.pdf", "résumé 履歴書.pdf"},
		{"Empty", "", "upload"},
		{"OnlyAPath", "dir/", "upload"},
		{"Dots", "..", "upload"},
		{"Long", strings.Repeat("é", persist.MaxFilenameLength+10), strings.Repeat("é", persist.MaxFilenameLength)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, persist.CleanFilename(tc.in))
		})
	}
}
