package push

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/natterchat/natter/persist"
)

// Payload limits.
const (
	// MaxPayload is the exclusive bound of a push payload's JSON, in bytes.
	MaxPayload = 3 * 1024
	// MaxBodyChars is the length a message body is cut to, in characters.
	MaxBodyChars = 240
	// maxTitleChars keeps the title (a display name and a channel name) bounded too.
	maxTitleChars = 120
	// anonymousAuthor stands for an author without a name in titles.
	anonymousAuthor = "Someone"
)

// Payload is the JSON a device's service worker receives (encrypted): whom it is for, the title
// an open tab shows, the message body as it reads at send time, the tag shared with the in-page
// alert (the message id) so a device shows one notification, and the conversation's route.
type Payload struct {
	UserID string `json:"user_id"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	Tag    string `json:"tag"`
	URL    string `json:"url"`
}

// Title is what an open tab shows for a message: the author and the channel ("Ada in
// #general"), the author alone in a direct conversation, and a fixed word for an author
// without a name.
func Title(authorName, channelName string) string {
	name := strings.TrimSpace(authorName)
	if name == "" {
		name = anonymousAuthor
	}
	if channelName != "" {
		name += " in #" + channelName
	}
	return truncate(name, maxTitleChars)
}

// URL is the route of the message's conversation (its thread, for a reply): the path the web
// app shows it at.
func URL(m persist.PushMessage) string {
	target := m.PlaceRouteID
	if m.ThreadRouteID != "" {
		target = m.ThreadRouteID
	}
	return "/" + m.WorkspaceRouteID + "/" + target
}

// Encode renders a payload with the body cut to MaxBodyChars characters. Codes: an error when
// the result would still reach MaxPayload bytes, which bounded fields cannot do.
func (p Payload) Encode() ([]byte, error) {
	p.Body = truncate(p.Body, MaxBodyChars)
	p.Title = truncate(p.Title, maxTitleChars)
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	if len(raw) >= MaxPayload {
		return nil, fmt.Errorf("push payload of %d bytes reaches the %d-byte limit", len(raw), MaxPayload)
	}
	return raw, nil
}

// truncate cuts s to at most n characters, the last of them an ellipsis when anything was cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
