package persist

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAroundSplit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                  string
		before, after, limit  int
		wantBefore, wantAfter int
	}{
		{"Balanced", 10, 10, 5, 3, 2},
		{"EvenLimitLeansNewer", 10, 10, 4, 2, 2},
		{"LimitOneIsThePivot", 10, 10, 1, 1, 0},
		{"ShortAfterFillsBefore", 10, 1, 5, 4, 1},
		{"NothingAfter", 10, 0, 5, 5, 0},
		{"ShortBeforeFillsAfter", 1, 10, 5, 1, 4},
		{"PivotMissingNothingBefore", 0, 10, 5, 0, 5},
		{"FewerThanLimit", 2, 1, 5, 2, 1},
		{"Empty", 0, 0, 5, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nb, na := aroundSplit(tc.before, tc.after, tc.limit)
			require.Equal(t, tc.wantBefore, nb, "before")
			require.Equal(t, tc.wantAfter, na, "after")
		})
	}
}
