package benchdata

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPercentilesAreNearestRank: of 100 samples the p99 is the second slowest (one preempted
// request must not decide it), of 50 the slowest; the p50 is the middle one.
func TestPercentilesAreNearestRank(t *testing.T) {
	samples := func(n int) []time.Duration {
		ds := make([]time.Duration, 0, n)
		for i := n; i >= 1; i-- { // unsorted
			ds = append(ds, time.Duration(i)*time.Millisecond)
		}
		return ds
	}
	require.Equal(t, timing{p50: 50 * time.Millisecond, p99: 99 * time.Millisecond}, percentiles(samples(100)))
	require.Equal(t, timing{p50: 25 * time.Millisecond, p99: 50 * time.Millisecond}, percentiles(samples(50)))
	require.Equal(t, timing{p50: 100 * time.Millisecond, p99: 198 * time.Millisecond}, percentiles(samples(200)))
	require.Equal(t, timing{p50: time.Millisecond, p99: time.Millisecond}, percentiles(samples(1)))
}
