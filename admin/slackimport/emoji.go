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
