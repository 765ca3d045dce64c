package slackimport

import "strings"

// emojiChars are the characters of the reactions Slack's people use most, by Slack's name.
// Natter stores a reaction's emoji as given (the web client sends characters), so these
// become the character; any other name is kept as :name:, which reads the same in Slack.
var emojiChars = map[string]string{
	"+1": "👍", "thumbsup": "👍", "-1": "👎", "thumbsdown": "👎", "heart": "❤️", "joy": "😂",
	"smile": "😄", "slightly_smiling_face": "🙂", "grinning": "😀", "laughing": "😆", "wink": "😉",
	"tada": "🎉", "raised_hands": "🙌", "clap": "👏", "pray": "🙏", "fire": "🔥", "rocket": "🚀",
	"eyes": "👀", "white_check_mark": "✅", "heavy_check_mark": "✔️", "x": "❌", "100": "💯",
	"thinking_face": "🤔", "ok_hand": "👌", "wave": "👋", "sob": "😭", "cry": "😢", "sweat_smile": "😅",
	"muscle": "💪", "star": "⭐", "sparkles": "✨", "warning": "⚠️", "question": "❓", "bulb": "💡",
	"point_up": "☝️", "heart_eyes": "😍", "sunglasses": "😎", "party_popper": "🎉", "partying_face": "🥳",
	"rofl": "🤣", "upside_down_face": "🙃", "facepalm": "🤦", "shrug": "🤷", "see_no_evil": "🙈",
	"coffee": "☕", "beers": "🍻", "pizza": "🍕", "trophy": "🏆", "memo": "📝", "bug": "🐛",
}

// emojiOf is the reaction stored for Slack's emoji name; a skin tone (name::skin-tone-3) is
// kept with the name when there is no character for it.
func emojiOf(name string) string {
	if c, ok := emojiChars[name]; ok {
		return c
	}
	base, tone, ok := strings.Cut(name, "::")
	if c, found := emojiChars[base]; found && ok && strings.HasPrefix(tone, "skin-tone-") {
		return c
	}
	return ":" + name + ":"
}
