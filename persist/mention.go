package persist

import (
	"slices"
	"strings"
)

// Broadcast mentions: names that address many people at once (docs/messages.md, "Mentions").
// They are reserved: no person may take them as a handle.
const (
	MentionHere     = "here"     // the place's members who are online
	MentionChannel  = "channel"  // every member of the place
	MentionEveryone = "everyone" // the same as channel
)

// isBroadcast reports whether a lowercased mention name is a broadcast.
func isBroadcast(name string) bool {
	return name == MentionHere || name == MentionChannel || name == MentionEveryone
}

// Mentions reports whether body mentions @handle (case-insensitive): an @ that does not follow a
// handle character (so an email address is no mention), then the handle, then anything but a
// handle character. An empty handle is never mentioned.
func Mentions(body, handle string) bool {
	if handle == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '@' || (i > 0 && isHandleByte(body[i-1])) {
			continue
		}
		end := i + 1 + len(handle)
		if end > len(body) || !equalFoldASCII(body[i+1:end], handle) {
			continue
		}
		if end == len(body) || !isHandleByte(body[end]) {
			return true
		}
	}
	return false
}

// Broadcasts reports the broadcast mentions body holds: all for @channel or @everyone, here for
// @here, by the rule of MentionedHandles.
func Broadcasts(body string) (here, all bool) {
	eachMentionName(body, func(name string) bool {
		switch strings.ToLower(name) {
		case MentionHere:
			here = true
		case MentionChannel, MentionEveryone:
			all = true
		}
		return !all
	})
	return here, all
}

// Addresses is the one rule of who a message mentions, for push, email and the Mentions view: a
// reader of its place is mentioned by an @mention of their handle, by @channel or @everyone,
// and by @here while online.
func Addresses(body, handle string, online bool) bool {
	if Mentions(body, handle) {
		return true
	}
	here, all := Broadcasts(body)
	return all || (here && online)
}

func isHandleByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-' || b == '@'
}

func equalFoldASCII(s, lower string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// MentionedHandles lists the handles body @mentions by the rule of Mentions, lowercased, each
// once, in order of first appearance, at most limit of them (a handle is 2 to 32 handle
// characters; anything longer names no one). Broadcasts are names too. Migration 0030's
// mention_names is the same rule in SQL (TestMentionNamesMatchGo).
func MentionedHandles(body string, limit int) []string {
	var out []string
	if limit <= 0 {
		return nil
	}
	eachMentionName(body, func(name string) bool {
		h := strings.ToLower(name)
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
		return len(out) < limit
	})
	return out
}

// eachMentionName calls fn with each name body @mentions, as written, until fn returns false.
func eachMentionName(body string, fn func(string) bool) {
	for i := 0; i < len(body); i++ {
		if body[i] != '@' || (i > 0 && isHandleByte(body[i-1])) {
			continue
		}
		end := i + 1
		for end < len(body) && isHandleByte(body[end]) && body[end] != '@' {
			end++
		}
		if end < len(body) && body[end] == '@' {
			continue // an email-like run: no mention
		}
		if n := end - i - 1; n >= 2 && n <= 32 && !fn(body[i+1:end]) {
			return
		}
		i = end - 1
	}
}
