package streams

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A waking workspace's first events reach the sockets waiting for its stream before the stream
// exists: the relay publishes them on core NATS (Relay.preview) while it creates the stream,
// and then publishes the same messages into it. Only natter's own connections may publish or
// subscribe there: a bot's permissions name its own subjects only.

// headerSubject carries, on a preview, the event subject the same message has in the stream.
const headerSubject = "Natter-Subject"

// PreviewSubject is where the relay previews a waking workspace's first events:
// natter.relay.preview.<workspace_id>.
func PreviewSubject(workspaceID string) string { return previewRoot + workspaceID }

// DecodePreview decodes a preview of workspaceID into the Event its stream will hold: the same
// subject, envelope and headers, the cursor from the relay's message id. A message of another
// workspace, or one the relay did not shape, is an error.
func DecodePreview(workspaceID string, m *nats.Msg) (Event, error) {
	subject := m.Header.Get(headerSubject)
	ws, scope, typ, ok := ParseSubject(subject)
	if !ok || ws != workspaceID || m.Subject != PreviewSubject(workspaceID) || !strings.HasPrefix(subject, eventsRoot) {
		return Event{}, fmt.Errorf("%w: preview %q of %q", ErrNotAnEvent, subject, m.Subject)
	}
	id, ok := strings.CutPrefix(m.Header.Get(jetstream.MsgIDHeader), workspaceID+":")
	cursor, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil || cursor < 1 {
		return Event{}, fmt.Errorf("streams: preview of %s without a cursor", workspaceID)
	}
	scope.MemberID = m.Header.Get(HeaderChannelMember)
	return Event{WorkspaceID: ws, Cursor: cursor, Scope: scope, Type: typ, Envelope: m.Data, Header: m.Header}, nil
}
