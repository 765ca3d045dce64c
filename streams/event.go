package streams

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natterchat/natter/persist"
)

// Event is one durable event of a workspace stream, decoded once for every reader: the cursor
// is the stream sequence; the workspace, scope and type come from the subject, so a reader can
// decide visibility without parsing JSON; Envelope is the published JSON envelope (CONTRACT.md
// §Events), the bytes clients receive; Header holds what the relay adds beside the envelope.
type Event struct {
	WorkspaceID string
	Cursor      int64
	Scope       persist.EventScope
	Type        string
	Envelope    []byte
	Header      nats.Header
}

// EnvelopeIDs are the ids of an envelope that consumers act on.
type EnvelopeIDs struct {
	ID        string `json:"id"`
	MessageID string `json:"message_id"`
}

// IDs parses the envelope's event and message ids; only consumers that need them pay for it.
func (e Event) IDs() (EnvelopeIDs, error) {
	var ids EnvelopeIDs
	if err := json.Unmarshal(e.Envelope, &ids); err != nil {
		return EnvelopeIDs{}, fmt.Errorf("streams: envelope of cursor %d: %w", e.Cursor, err)
	}
	if ids.ID == "" {
		return EnvelopeIDs{}, fmt.Errorf("streams: envelope of cursor %d has no id", e.Cursor)
	}
	return ids, nil
}

// ErrNotAnEvent is returned by decodeMsg for a message whose subject is not an event subject.
var ErrNotAnEvent = errors.New("streams: not an event subject")

// decodeMsg is the one decoding of a stream message into an Event.
func decodeMsg(m jetstream.Msg) (Event, error) {
	meta, err := m.Metadata()
	if err != nil {
		return Event{}, fmt.Errorf("streams: message metadata: %w", err)
	}
	ws, scope, typ, ok := ParseSubject(m.Subject())
	if !ok {
		return Event{}, fmt.Errorf("%w: %q", ErrNotAnEvent, m.Subject())
	}
	scope.MemberID = m.Headers().Get(HeaderChannelMember)
	return Event{WorkspaceID: ws, Cursor: int64(meta.Sequence.Stream), Scope: scope, Type: typ, Envelope: m.Data(),
		Header: m.Headers()}, nil
}

// EncodeEvent is the one encoding of a logged event, for the stream and for replays alike: the
// subject it is published on and its envelope.
func EncodeEvent(e persist.Event) (subject string, envelope []byte, err error) {
	// Not json.Marshal(e): it would scan and compact the envelope, payload included, once more.
	envelope, err = e.MarshalJSON()
	if err != nil {
		return "", nil, fmt.Errorf("streams: encode cursor %d: %w", e.Cursor, err)
	}
	return EventSubject(e), envelope, nil
}
