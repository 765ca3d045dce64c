package slackimport

import (
	"strings"
)

// namer answers the names markup refers to by Slack id: a person's mention ("@ann") and a
// channel's name, "" when unknown.
type namer interface {
	mention(slackUserID string) string
	channelName(slackChannelID string) string
}

// unescape undoes the three escapes Slack applies to message text.
var unescape = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

// rewrite turns Slack's markup into plain Natter text: <@U…> becomes the person's handle,
// <#C…|name> the channel's name, <url|text> a Markdown link, <!here> and friends @here, dates
// their fallback text, *bold* and ~strike~ Markdown's **bold** and ~~strike~~, :tada: 🎉, and
// &amp; &lt; &gt; their characters. A lone < (Slack escapes real ones, so this is a malformed
// message) is kept as written.
func rewrite(text string, n namer) string {
	text = shortcodes(emphasis(text))
	var b strings.Builder
	for {
		open := strings.IndexByte(text, '<')
		if open < 0 {
			break
		}
		end := strings.IndexByte(text[open:], '>')
		if end < 0 {
			break
		}
		b.WriteString(unescape.Replace(text[:open]))
		b.WriteString(token(text[open+1:open+end], n))
		text = text[open+end+1:]
	}
	b.WriteString(unescape.Replace(text))
	return b.String()
}

// token rewrites the inside of one <…>.
func token(inner string, n namer) string {
	target, label, hasLabel := strings.Cut(inner, "|")
	label = unescape.Replace(label)
	switch {
	case strings.HasPrefix(target, "@"):
		if m := n.mention(target[1:]); m != "" {
			return m
		}
		if hasLabel && label != "" {
			return "@" + strings.TrimPrefix(label, "@")
		}
		return target
	case strings.HasPrefix(target, "#"):
		if name := n.channelName(target[1:]); name != "" {
			return "#" + name
		}
		if hasLabel && label != "" {
			return "#" + strings.TrimPrefix(label, "#")
		}
		return target
	case strings.HasPrefix(target, "!"):
		word, _, _ := strings.Cut(target[1:], "^")
		switch word {
		case "here", "channel", "everyone":
			return "@" + word
		}
		if hasLabel && label != "" {
			return label
		}
		return "@" + word
	}
	url := unescape.Replace(target)
	if strings.HasPrefix(url, "mailto:") {
		if hasLabel && label != "" {
			return label
		}
		return strings.TrimPrefix(url, "mailto:")
	}
	if !hasLabel || label == "" || label == url || "http://"+label == url || "https://"+label == url {
		return url
	}
	return "[" + label + "](" + url + ")"
}

// emphasis rewrites Slack's single-character bold and strike markers as Markdown's doubled
// ones (Slack's _italic_ is already Markdown). Code spans, code blocks and <…> tokens are left
// alone (a URL or an id may hold a * or a ~ that marks nothing) but a span may enclose them:
// each is swapped for an opaque placeholder while the markers are rewritten.
func emphasis(text string) string {
	if strings.IndexByte(text, '*') < 0 && strings.IndexByte(text, '~') < 0 || strings.IndexByte(text, placeholder) >= 0 {
		return text
	}
	var plain strings.Builder
	var kept []string
	for text != "" {
		if n := verbatimPrefix(text); n > 0 {
			plain.WriteByte(placeholder)
			kept = append(kept, text[:n])
			text = text[n:]
			continue
		}
		plain.WriteByte(text[0])
		text = text[1:]
	}
	styled := doubleMarker(doubleMarker(plain.String(), '*'), '~')
	var b strings.Builder
	for i := 0; i < len(styled); i++ {
		if styled[i] == placeholder {
			b.WriteString(kept[0])
			kept = kept[1:]
			continue
		}
		b.WriteByte(styled[i])
	}
	return b.String()
}

// placeholder stands for a verbatim region in emphasis: NUL, which no message body may hold (a
// text that has one is left as it is, and refused later), neither a space nor punctuation, so
// a marker beside it behaves as beside a word.
const placeholder = 0

// verbatimPrefix is the length of the code block, code span or <…> token text starts with, 0
// when it starts with none (an unclosed one is ordinary text).
func verbatimPrefix(text string) int {
	for _, delim := range [][2]string{{"```", "```"}, {"`", "`"}, {"<", ">"}} {
		if strings.HasPrefix(text, delim[0]) {
			if end := strings.Index(text[len(delim[0]):], delim[1]); end >= 0 {
				return len(delim[0]) + end + len(delim[1])
			}
		}
	}
	return 0
}

// doubleMarker doubles marker around every span Slack would style: the opening one at the start
// or after a space or punctuation, followed by a non-space; the closing one on the same line,
// after a non-space, followed by the end, a space or punctuation; never a doubled marker. 2*3*4
// styles nothing.
func doubleMarker(text string, marker byte) string {
	if strings.IndexByte(text, marker) < 0 {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		if text[i] != marker || (i > 0 && (text[i-1] == marker || !slackBoundary(text[i-1]))) ||
			i+1 >= len(text) || isSpace(text[i+1]) || text[i+1] == marker {
			b.WriteByte(text[i])
			continue
		}
		closing := -1
		for j := i + 1; j < len(text) && text[j] != '\n'; j++ {
			if text[j] == marker && !isSpace(text[j-1]) && text[j-1] != marker &&
				(j+1 == len(text) || (text[j+1] != marker && slackBoundary(text[j+1]))) {
				closing = j
				break
			}
		}
		if closing < 0 {
			b.WriteByte(text[i])
			continue
		}
		b.WriteByte(marker)
		b.WriteByte(marker)
		b.WriteString(text[i+1 : closing])
		b.WriteByte(marker)
		b.WriteByte(marker)
		i = closing
	}
	return b.String()
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// slackBoundary reports whether c may stand beside a styling marker: a space or punctuation,
// not a letter, digit or another byte of a UTF-8 character.
func slackBoundary(c byte) bool {
	return isSpace(c) || (c < 0x80 && strings.IndexByte(".,;:!?()[]{}\"'_~*-/", c) >= 0)
}
