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
// their fallback text, and &amp; &lt; &gt; their characters. A lone < (Slack escapes real
// ones, so this is a malformed message) is kept as written.
func rewrite(text string, n namer) string {
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
