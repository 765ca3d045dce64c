package persist_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/natterchat/natter/persist"
)

// envelopeByEncodingJSON is CONTRACT.md §Events' envelope as encoding/json renders it: the
// reference the hand-written encoder must match byte for byte.
func envelopeByEncodingJSON(t *testing.T, e persist.Event) []byte {
	t.Helper()
	type wire struct {
		ID                   string          `json:"id"`
		Cursor               string          `json:"cursor"`
		Type                 string          `json:"type"`
		WorkspaceID          string          `json:"workspace_id"`
		ChannelID            string          `json:"channel_id,omitempty"`
		DirectConversationID string          `json:"direct_conversation_id,omitempty"`
		MessageID            string          `json:"message_id,omitempty"`
		Seq                  *int64          `json:"seq,omitempty"`
		ActorID              string          `json:"actor_id,omitempty"`
		CreatedAt            time.Time       `json:"created_at"`
		Payload              json.RawMessage `json:"payload"`
	}
	cursor := ""
	if e.Cursor > 0 {
		cursor = itoa(e.Cursor)
	}
	payload := e.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("{}")
	}
	out, err := json.Marshal(wire{e.ID, cursor, e.Type, e.WorkspaceID, e.ChannelID, e.DirectConversationID,
		e.MessageID, e.Seq, e.ActorID, e.CreatedAt, payload})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestEventJSONMatchesEncodingJSON(t *testing.T) {
	seq := int64(42)
	zero := int64(0)
	at := time.Date(2026, 11, 26, 11, 46, 22, 955000000, time.UTC)
	msg, err := json.Marshal(map[string]any{"message": map[string]any{"body": "a <b> & \"c\" \u2028 é 😀", "n": 1.5}})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]persist.Event{
		"every field": {ID: "evt_1", WorkspaceID: "wsp_1", Cursor: 17, Type: "message.created", ChannelID: "chn_1",
			MessageID: "msg_1", Seq: &seq, ActorID: "usr_1", CreatedAt: at, Payload: msg},
		"direct conversation, seq zero": {ID: "evt_2", WorkspaceID: "wsp_1", Cursor: 9007199254740993,
			Type: "message.created", DirectConversationID: "dm_1", Seq: &zero, CreatedAt: at, Payload: []byte(`{}`)},
		"no cursor yet, no payload":      {ID: "evt_3", WorkspaceID: "wsp_1", Type: "workspace.updated", CreatedAt: at},
		"zero time":                      {ID: "evt_4", WorkspaceID: "wsp_1", Cursor: 1, Type: "x", Payload: []byte(`[]`)},
		"other zone, no sub-second":      {ID: "evt_5", WorkspaceID: "w", Cursor: 2, Type: "t", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", -5*3600-30*60)), Payload: []byte(`null`)},
		"strings that need escaping":     {ID: "evt\"6\\", WorkspaceID: "<wsp>&", Cursor: 3, Type: "a\u2028b\u2029c\x01\x1f\t\n", ChannelID: "é", ActorID: "\xff\xfe", CreatedAt: at, Payload: msg},
		"nanoseconds with trailing zero": {ID: "evt_7", WorkspaceID: "w", Cursor: 4, Type: "t", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 120000000, time.UTC), Payload: msg},
	}
	for name, e := range cases {
		t.Run(name, func(t *testing.T) {
			want := envelopeByEncodingJSON(t, e)
			got, err := e.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("MarshalJSON:\n got %s\nwant %s", got, want)
			}
			if got := e.AppendJSON([]byte("prefix")); !bytes.Equal(got, append([]byte("prefix"), want...)) {
				t.Fatalf("AppendJSON:\n got %s\nwant prefix%s", got, want)
			}
			// json.Marshal of the event itself goes through MarshalJSON and checks its output.
			if viaStd, err := json.Marshal(e); err != nil || !bytes.Equal(viaStd, want) {
				t.Fatalf("json.Marshal: %s, %v", viaStd, err)
			}
		})
	}
}
