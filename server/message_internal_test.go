package server

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/persist"
)

func TestParseWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		query string
		want  persist.Window
		bad   bool
	}{
		{query: "", want: persist.Window{Mode: persist.WindowEarliest, Limit: 100}},
		{query: "limit=1", want: persist.Window{Mode: persist.WindowEarliest, Limit: 1}},
		{query: "limit=200", want: persist.Window{Mode: persist.WindowEarliest, Limit: 200}},
		{query: "limit=0", want: persist.Window{Mode: persist.WindowEarliest, Limit: 100}},
		{query: "limit=-5", want: persist.Window{Mode: persist.WindowEarliest, Limit: 100}},
		{query: "limit=201", want: persist.Window{Mode: persist.WindowEarliest, Limit: 200}},
		{query: "limit=500", want: persist.Window{Mode: persist.WindowEarliest, Limit: 200}},
		{query: "limit=x", want: persist.Window{Mode: persist.WindowEarliest, Limit: 100}},
		{query: "latest=true", want: persist.Window{Mode: persist.WindowLatest, Limit: 100}},
		{query: "latest=false", want: persist.Window{Mode: persist.WindowEarliest, Limit: 100}},
		{query: "mode=latest&limit=7", want: persist.Window{Mode: persist.WindowLatest, Limit: 7}},
		{query: "before_seq=9", want: persist.Window{Mode: persist.WindowBefore, Seq: 9, Limit: 100}},
		{query: "after_seq=0", want: persist.Window{Mode: persist.WindowAfter, Seq: 0, Limit: 100}},
		{query: "around_seq=4&limit=3", want: persist.Window{Mode: persist.WindowAround, Seq: 4, Limit: 3}},
		{query: "after_seq=3&latest=false", want: persist.Window{Mode: persist.WindowAfter, Seq: 3, Limit: 100}},
		{query: "before_seq=1&after_seq=2", bad: true},
		{query: "around_seq=1&after_seq=2", bad: true},
		{query: "around_seq=1&latest=true", bad: true},
		{query: "before_seq=1&mode=latest", bad: true},
		{query: "before_seq=-1", bad: true},
		{query: "after_seq=1e3", bad: true},
		{query: "around_seq=", bad: true},
		{query: "latest=yes", bad: true},
		{query: "mode=earliest", bad: true},
	} {
		q, err := url.ParseQuery(tc.query)
		require.NoError(t, err)
		got, err := parseWindow(q, clampLimit)
		if tc.bad {
			e, ok := persist.ErrorOf(err)
			require.True(t, ok, "%s: %v", tc.query, err)
			require.Equal(t, persist.CodeInvalidRequest, e.Code, tc.query)
			continue
		}
		require.NoError(t, err, tc.query)
		require.Equal(t, tc.want, got, tc.query)
	}
}

// TestParseThreadWindow: thread pages keep their contract, an out-of-range limit means 100.
func TestParseThreadWindow(t *testing.T) {
	t.Parallel()
	for query, want := range map[string]int{"limit=201": 100, "limit=500": 100, "limit=0": 100, "limit=200": 200, "limit=7": 7} {
		q, err := url.ParseQuery(query)
		require.NoError(t, err)
		got, err := parseWindow(q, defaultLimit)
		require.NoError(t, err)
		require.Equal(t, want, got.Limit, query)
	}
}

// TestMessageAndEventEncoding: the create answer encoded once is byte for byte what encoding
// the object {"message", "event"} gives, markup and non-ASCII text included.
func TestMessageAndEventEncoding(t *testing.T) {
	t.Parallel()
	seq := int64(7)
	at := time.Date(2026, 11, 26, 9, 30, 0, 123456000, time.UTC)
	m := persist.Message{ID: "msg_1", WorkspaceID: "wsp_1", ChannelID: "chn_1", AuthorID: "usr_1",
		Author: persist.PublicUser{ID: "usr_1"}, ThreadRootID: "msg_1", ChannelSeq: &seq,
		Body: "<b>bold</b> & \u2028 naïve \"quoted\"", BodyFormat: "markdown", Kind: "message", CreatedAt: at,
		Nonce: "n-1", Reactions: []persist.ReactionSummary{}, Attachments: []persist.Upload{}}
	payload, err := json.Marshal(map[string]any{"message": m, "nonce": "n-1"})
	require.NoError(t, err)
	ev := persist.Event{ID: "evt_1", WorkspaceID: "wsp_1", Cursor: 42, Type: "message.created", ChannelID: "chn_1",
		MessageID: "msg_1", Seq: &seq, ActorID: "usr_1", CreatedAt: at, Payload: payload}
	want, err := json.Marshal(map[string]any{"message": m, "event": ev})
	require.NoError(t, err)
	got, ok := messageAndEvent(m, ev).(encodedJSON)
	require.True(t, ok)
	require.Equal(t, string(want), string(got))
}
