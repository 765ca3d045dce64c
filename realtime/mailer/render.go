package mailer

import (
	"fmt"
	"html"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/natterchat/natter/outbound/email"
	"github.com/natterchat/natter/persist"
)

// Bounds of what one email shows: the newest messages are the ones kept when there are more.
const (
	maxShown     = 20
	maxBodyChars = 2000
)

// UnsubscribePath is the one-click unsubscribe endpoint, which takes ?token=.
const UnsubscribePath = "/api/email/unsubscribe"

// render writes a digest as an email: the messages (author, time, text), a link into the
// client, and the one-click unsubscribe link, in plain text and HTML. The batch id is the
// Message-ID, so a batch submitted twice (a sender died between the relay's answer and its
// record) is recognisably one email.
func render(d persist.EmailDigest, publicURL, batchID string) email.Message {
	link := publicURL + d.Path + "#message=" + url.QueryEscape(d.Messages[0].ID)
	unsubscribe := publicURL + UnsubscribePath + "?token=" + url.QueryEscape(d.Unsubscribe)
	shown := d.Messages
	if len(shown) > maxShown {
		shown = shown[len(shown)-maxShown:]
	}
	where := "a direct conversation"
	if d.Place != "" {
		where = d.Place
	}
	var subject string
	switch n := len(d.Messages); {
	case d.Thread:
		subject = fmt.Sprintf("New replies in a thread in %s", where)
		if n == 1 {
			subject = fmt.Sprintf("A new reply in a thread in %s", where)
		}
	case d.Place == "" && n == 1:
		subject = fmt.Sprintf("New message from %s", d.Messages[0].Author)
	case d.Place == "":
		subject = fmt.Sprintf("%d new messages in %s", n, where)
	case n == 1:
		subject = fmt.Sprintf("%s mentioned you in %s", d.Messages[0].Author, where)
	default:
		subject = fmt.Sprintf("%d mentions of you in %s", n, where)
	}
	subject = "[" + d.WorkspaceName + "] " + subject

	var text, body strings.Builder
	fmt.Fprintf(&text, "Hi %s,\n\nWhile you were away, in %s of %s:\n\n", d.Name, where, d.WorkspaceName)
	fmt.Fprintf(&body, "<p>Hi %s,</p><p>While you were away, in %s of <b>%s</b>:</p>", esc(d.Name), esc(where), esc(d.WorkspaceName))
	if more := len(d.Messages) - len(shown); more > 0 {
		fmt.Fprintf(&text, "(%d earlier messages are not shown.)\n\n", more)
		fmt.Fprintf(&body, "<p>(%d earlier messages are not shown.)</p>", more)
	}
	for _, m := range shown {
		when := m.CreatedAt.UTC().Format("2 Jan 15:04 UTC")
		msg := cut(m.Body)
		fmt.Fprintf(&text, "%s, %s:\n%s\n\n", m.Author, when, msg)
		fmt.Fprintf(&body, `<div style="margin:0 0 1em"><b>%s</b> <span style="color:#666">%s</span><div style="white-space:pre-wrap">%s</div></div>`,
			esc(m.Author), esc(when), esc(msg))
	}
	fmt.Fprintf(&text, "Open it in Natter: %s\n\n-- \nYou get this email because these messages stayed unread. Change the delay or turn these emails off in Natter's notification settings, or unsubscribe at once: %s\n",
		link, unsubscribe)
	fmt.Fprintf(&body, `<p><a href="%s">Open it in Natter</a></p><hr><p style="color:#666;font-size:small">You get this email because these messages stayed unread. Change the delay or turn these emails off in Natter's notification settings, or <a href="%s">unsubscribe</a>.</p>`,
		esc(link), esc(unsubscribe))
	return email.Message{To: d.To, Subject: subject, Text: text.String(), HTML: body.String(),
		Unsubscribe: unsubscribe, Automatic: true, MessageID: strings.ReplaceAll(batchID, "_", "-")}
}

func esc(s string) string { return html.EscapeString(s) }

// cut bounds a message body to maxBodyChars characters, the last an ellipsis.
func cut(s string) string {
	if utf8.RuneCountInString(s) <= maxBodyChars {
		return s
	}
	r := []rune(s)
	return string(r[:maxBodyChars-1]) + "…"
}
