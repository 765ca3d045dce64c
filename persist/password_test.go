package persist_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
)

// TestPasswordIdentifierKey: every spelling of an identifier that reaches one account shares a
// key (and so a login budget); an email and a handle never share one.
func TestPasswordIdentifierKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		a, b string
		same bool
	}{
		{"EmailCase", "Nia@Example.com", "nia@example.COM", true},
		{"EmailSpaces", " nia@example.com ", "nia@example.com", true},
		{"HandleWithAt", "@Nia", "nia", true},
		{"HandleCase", "NIA", "nia", true},
		{"EmailIsNotHandle", "nia@example.com", "nia", false},
		{"DifferentHandles", "nia", "nio", false},
		{"LeadingAtOnEmail", "@nia@example.com", "nia@example.com", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.same, persist.PasswordIdentifierKey(tc.a) == persist.PasswordIdentifierKey(tc.b))
		})
	}
}
