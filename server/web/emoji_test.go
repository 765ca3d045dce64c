package web_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/natterchat/natter/server/web"
)

// TestEmojiTable checks the invariants of the table the picker, : completion and the Slack
// import share: the whole standard set in Unicode's categories, each emoji and each shortcode
// once, the fully-qualified forms the rest of the client sends, and the skin-tone rule.
func TestEmojiTable(t *testing.T) {
	t.Parallel()
	all, err := web.EmojiTable()
	if err != nil {
		t.Fatal(err)
	}
	// Emoji 15.0 alone has 1,870 emoji without skin tones or components (Unicode's emoji-counts).
	if len(all) < 1870 {
		t.Fatalf("%d emoji, want the full set (at least 1870)", len(all))
	}
	var categories []string
	chars, codes := map[string]string{}, map[string]string{}
	toned := 0
	for _, e := range all {
		if len(categories) == 0 || categories[len(categories)-1] != e.Category {
			categories = append(categories, e.Category)
		}
		if !utf8.ValidString(e.Char) || e.Char == "" || strings.ContainsAny(e.Char, " \t") || e.Name == "" {
			t.Fatalf("malformed entry %+v", e)
		}
		if prev, dup := chars[e.Char]; dup {
			t.Fatalf("%s is in the table twice (%q, %q)", e.Char, prev, e.Name)
		}
		chars[e.Char] = e.Name
		for _, c := range e.Shortcodes {
			if prev, dup := codes[c]; dup {
				t.Fatalf("shortcode %q names both %s and %s", c, prev, e.Char)
			}
			if c == "" || strings.ContainsAny(c, ": \t") || c != strings.ToLower(c) {
				t.Fatalf("shortcode %q of %s cannot be typed as :%s:", c, e.Char, c)
			}
			codes[c] = e.Char
		}
		if e.Tones {
			toned++
		}
	}
	want := "Smileys & Emotion|People & Body|Animals & Nature|Food & Drink|Travel & Places|Activities|Objects|Symbols|Flags"
	if got := strings.Join(categories, "|"); got != want {
		t.Fatalf("categories %s, want %s, each once", got, want)
	}
	if toned < 250 {
		t.Fatalf("%d emoji take skin tones, want the people and hands (at least 250)", toned)
	}
	for code, char := range map[string]string{
		"tada": "🎉", "+1": "\U0001F44D", "thumbsup": "\U0001F44D", "heart": "\u2764\uFE0F", "joy": "😂",
		"white_check_mark": "✅", "rocket": "🚀", "eyes": "👀", "thinking_face": "🤔", "flag-jp": "🇯🇵",
		"rainbow-flag": "\U0001F3F3\uFE0F\u200D\U0001F308", "face_palm": "🤦",
	} {
		if e, ok := web.EmojiByShortcode(code); !ok || e.Char != char {
			t.Errorf(":%s: is %q (found %v), want %q", code, e.Char, ok, char)
		}
	}
	if _, ok := web.EmojiByShortcode("party-parrot"); ok {
		t.Errorf("a custom Slack emoji is in the standard table")
	}
	thumbs, _ := web.EmojiByShortcode("+1")
	heart, _ := web.EmojiByShortcode("heart")
	wave, _ := web.EmojiByShortcode("wave")
	for _, c := range []struct{ got, want string }{
		{thumbs.WithTone(3), "\U0001F44D\U0001F3FD"}, {thumbs.WithTone(0), "\U0001F44D"}, {thumbs.WithTone(6), "\U0001F44D"},
		{wave.WithTone(5), "\U0001F44B\U0001F3FF"}, {heart.WithTone(2), "\u2764\uFE0F"},
	} {
		if c.got != c.want {
			t.Errorf("with a tone: %q, want %q", c.got, c.want)
		}
	}
	if e, _ := web.EmojiByShortcode("tada"); e.Name != "party popper" || e.Category != "Activities" {
		t.Errorf(":tada: is %+v, want party popper in Activities", e)
	}
}
