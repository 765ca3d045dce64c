package slackimport

import (
	"strconv"
	"strings"

	"github.com/natterchat/natter/server/web"
)

// emojiOf is the reaction stored for Slack's emoji name. Natter stores a reaction's emoji as
// given (the web client sends characters), so a standard emoji becomes its character, looked up
// in the client's own table (Slack's names are its first shortcodes), so an imported 👍 and one
// picked in the client are one reaction. A skin tone (name::skin-tone-2 … -6, Slack's light to
// dark) is applied where the emoji takes one. Any other name (a workspace's custom emoji) is kept
// as :name:, which reads the same as in Slack.
func emojiOf(name string) string {
	base, tone, toned := strings.Cut(name, "::")
	e, ok := web.EmojiByShortcode(base)
	if !ok {
		return ":" + name + ":"
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(tone, "skin-tone-")); toned && err == nil {
		return e.WithTone(n - 1)
	}
	return e.Char
}

// shortcodes turns the :name: (and :name::skin-tone-N:) of standard emoji in a message's text
// into their characters, as Slack shows them; code, <…> tokens and unknown (custom) names stay
// as written. A name must stand apart: after the start, a space, punctuation or another emoji,
// and before the end, a space or punctuation, so 10:30:00 or a:b:c mean no emoji.
func shortcodes(text string) string {
	if strings.IndexByte(text, ':') < 0 {
		return text
	}
	var b strings.Builder
	apart := true
	for text != "" {
		if n := verbatimPrefix(text); n > 0 {
			b.WriteString(text[:n])
			text, apart = text[n:], false
			continue
		}
		if text[0] == ':' && apart {
			if c, n := shortcodeAt(text); n > 0 {
				b.WriteString(c)
				text = text[n:]
				continue
			}
		}
		apart = text[0] != ':' && slackBoundary(text[0])
		b.WriteByte(text[0])
		text = text[1:]
	}
	return b.String()
}

// shortcodeAt reads the :name: or :name::skin-tone-N: text starts with: its emoji and length,
// or 0 when it is not a standard emoji's name standing apart.
func shortcodeAt(text string) (string, int) {
	end := strings.IndexByte(text[1:], ':')
	if end <= 0 || end > 64 || strings.ContainsAny(text[1:1+end], " \t\n<>`") {
		return "", 0
	}
	name, n := text[1:1+end], end+2
	if rest, ok := strings.CutPrefix(text[n:], ":skin-tone-"); ok && len(rest) >= 2 && rest[1] == ':' {
		name, n = name+"::skin-tone-"+rest[:1], n+len(":skin-tone-")+2
	}
	if n < len(text) && !slackBoundary(text[n]) {
		return "", 0
	}
	if c := emojiOf(name); !strings.HasPrefix(c, ":") {
		return c, n
	}
	return "", 0
}
