package persist

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// MarshalJSON renders the envelope of CONTRACT.md §Events, the cursor as an opaque string.
//
// It is written out by hand because every post's event is encoded twice on the hot path (the
// create answer, the relay's stream message) and encoding/json re-scans and compacts the output
// of a Marshaler and every json.RawMessage: the payload, which holds the whole message, was
// scanned three times per encoding. The payload is trusted as it is: EventAppend makes it with
// json.Marshal and the events table stores it verbatim (a json column, not jsonb). The output is
// byte for byte what encoding/json gives for the same envelope (TestEventJSONMatchesEncodingJSON).
func (e Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, 256+len(e.Payload))), nil
}

// AppendJSON appends the envelope MarshalJSON renders to b.
func (e Event) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, e.ID)
	b = append(b, `,"cursor":`...)
	if e.Cursor > 0 {
		b = append(b, '"')
		b = strconv.AppendInt(b, e.Cursor, 10)
		b = append(b, '"')
	} else {
		b = append(b, `""`...)
	}
	b = append(b, `,"type":`...)
	b = appendJSONString(b, e.Type)
	b = append(b, `,"workspace_id":`...)
	b = appendJSONString(b, e.WorkspaceID)
	b = appendOptionalField(b, `,"channel_id":`, e.ChannelID)
	b = appendOptionalField(b, `,"direct_conversation_id":`, e.DirectConversationID)
	b = appendOptionalField(b, `,"message_id":`, e.MessageID)
	if e.Seq != nil {
		b = append(b, `,"seq":`...)
		b = strconv.AppendInt(b, *e.Seq, 10)
	}
	b = appendOptionalField(b, `,"actor_id":`, e.ActorID)
	b = append(b, `,"created_at":`...)
	b = appendJSONTime(b, e.CreatedAt)
	b = append(b, `,"payload":`...)
	if len(e.Payload) == 0 {
		b = append(b, `{}`...)
	} else {
		b = append(b, e.Payload...)
	}
	return append(b, '}')
}

func appendOptionalField(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	return appendJSONString(append(b, name...), value)
}

// appendJSONTime renders t as time.Time's MarshalJSON does.
func appendJSONTime(b []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 {
		enc, _ := t.MarshalJSON() // refuses such a year; no event has one
		return append(b, enc...)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendJSONString appends s as a JSON string. Ids and types are plain ASCII, and names mostly
// ASCII or valid UTF-8 that needs no escaping: those take the fast path; anything else is left to
// encoding/json, so the escaping (HTML-safe <, >, &, U+2028, U+2029, invalid UTF-8) is exactly its.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return appendJSONStringEscaped(b, s)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return appendJSONStringEscaped(b, s)
		}
		i += size
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendJSONStringEscaped(b []byte, s string) []byte {
	enc, _ := json.Marshal(s) // a string always marshals
	return append(b, enc...)
}
