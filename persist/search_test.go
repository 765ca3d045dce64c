package persist

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHighlightRanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, headline, snippet string
		want                    []Highlight
	}{
		{"None", "plain text", "plain text", []Highlight{}},
		{"One", "a \ue000match\ue001 here", "a match here", []Highlight{{2, 7}}},
		{"CodePointsNotBytes", "🚀é \ue000ünïcode\ue001 and \ue000x\ue001", "🚀é ünïcode and x", []Highlight{{3, 10}, {15, 16}}},
		{"Adjacent", "\ue000a\ue001\ue000b\ue001", "ab", []Highlight{{0, 1}, {1, 2}}},
		{"EmptyRangeDropped", "x\ue000\ue001y", "xy", []Highlight{}},
		{"UnbalancedStopIgnored", "x\ue001y", "xy", []Highlight{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			snippet, hs := highlightRanges(tc.headline)
			require.Equal(t, tc.snippet, snippet)
			require.Equal(t, tc.want, hs)
		})
	}
}

func TestSearchCursorIsBound(t *testing.T) {
	t.Parallel()
	p := SearchParams{WorkspaceID: "wsp_1", Query: "q", Sort: SearchSortRelevance}
	bound := searchFingerprint("usr_1", p)
	c := searchCursor{Bound: bound, Rank: 0.0607927, ID: "msg_1"}
	got, err := decodeSearchCursor(encodeSearchCursor(c), bound)
	require.NoError(t, err)
	require.Equal(t, c, got, "the rank survives the round trip exactly")
	other := p
	other.ChannelID = "chn_1"
	for _, b := range []string{searchFingerprint("usr_2", p), searchFingerprint("usr_1", other)} {
		_, err := decodeSearchCursor(encodeSearchCursor(c), b)
		require.Error(t, err)
	}
}
