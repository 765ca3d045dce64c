package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowserEmoji drives the emoji picker and shortcodes (issue 30) at 1280×800 and 390×844:
// "Add reaction" opens the picker, "tada" finds 🎉 and Enter reacts with it; after a reload
// the composer's picker shows it first (recently used), the arrows move through the grid and
// a click puts an emoji in the composer; `:tada:` typed becomes 🎉 before it is sent, and `:`
// with two letters offers completions from the whole table.
func TestBrowserEmoji(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ana := e.person(t, "Ana Lima")
	ws := e.workspace(t, ana, "Acme")
	general := e.channel(t, ana, ws.ID, "general")
	b := newBrowser(t, e)
	tab := b.tab(t, ana)
	open := func(t *testing.T) {
		do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
		waitFor(t, tab, "general open", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
	}
	open(t)
	picker := `document.querySelector('.emoji-picker[role=dialog]')`
	firstEmoji := picker + `?.querySelector('.emoji-btn')`
	box := `form.composer .compose-box`

	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			resize(t, tab, w, h)
			eval[bool](t, tab, `localStorage.removeItem('natter.emoji.recent'), true`)
			body := fmt.Sprintf("ship it at %d", w)
			var posted struct{ Message struct{ ID string } }
			e.api(t, ana, "POST", "/api/channels/"+general.ID+"/messages", map[string]string{"body": body}, &posted)
			waitFor(t, tab, "the message", hasBody(body))

			// Add reaction → the picker, its search focused; "tada" finds the party popper first.
			clickAction(t, tab, body, "Add reaction")
			waitFor(t, tab, "the picker, searching", picker+` && document.activeElement === `+picker+`.querySelector('input.emoji-search')`)
			waitFor(t, tab, "the whole table", fmt.Sprintf(`%s.querySelectorAll('.emoji-btn').length > 1800 && (r => r.left >= 0 && r.right <= %d && r.top >= 0 && r.bottom <= %d)(%s.getBoundingClientRect())`, picker, w, h, picker))
			do(t, tab, "search tada", chromedp.SendKeys(`.emoji-picker input.emoji-search`, "tada"))
			waitFor(t, tab, "the party popper found first", `(b => b?.textContent === '🎉' && b.getAttribute('aria-label') === 'party popper' && b.title === ':tada:')(`+firstEmoji+`)`)
			shot(t, tab, fmt.Sprintf("emoji-search-%d", w))
			if w > 800 {
				checkA11y(t, tab, "the emoji picker")
			}
			do(t, tab, "choose it with Enter", enter())
			waitFor(t, tab, "the picker closed", `!`+picker)
			waitFor(t, tab, "the 🎉 reaction", fmt.Sprintf(`[...document.querySelectorAll('.list .msg')].some(m => m.querySelector('.body')?.textContent === %q
				&& [...m.querySelectorAll('.reactions .chip')].some(c => c.querySelector('.emoji').textContent === '🎉' && c.querySelector('.n').textContent === '1' && c.getAttribute('aria-pressed') === 'true'))`, body))
			var page struct {
				Messages []struct {
					ID        string
					Reactions []struct{ Emoji string }
				}
			}
			e.api(t, ana, "GET", "/api/channels/"+general.ID+"/messages?limit=50", nil, &page)
			for _, m := range page.Messages {
				if m.ID == posted.Message.ID && (len(m.Reactions) != 1 || m.Reactions[0].Emoji != "🎉") {
					t.Fatalf("the server holds reactions %+v, want 🎉", m.Reactions)
				}
			}

			// After a reload, the composer's picker shows 🎉 first; ↓ from the search field goes to
			// it, → to the next (👍, a default), ↓ a row down, ↑ back; a click puts one in the box.
			open(t)
			do(t, tab, "the composer's emoji button", mouseClick(`form.composer button[aria-label="Emoji"]`))
			waitFor(t, tab, "recently used first", `(b => b?.textContent === '🎉' && b.closest('.emoji-section').dataset.name === 'Frequently used')(`+firstEmoji+`)`)
			shot(t, tab, fmt.Sprintf("emoji-picker-%d", w))
			do(t, tab, "↓ → ↓ ↑", chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowUp))
			waitFor(t, tab, "👍 focused", `document.activeElement?.classList.contains('emoji-btn') && document.activeElement.textContent === '👍' && document.activeElement.tabIndex === 0`)
			do(t, tab, "Esc", chromedp.KeyEvent(kb.Escape))
			waitFor(t, tab, "closed, the focus back on the button", `!`+picker+` && document.activeElement?.getAttribute('aria-label') === 'Emoji'`)
			do(t, tab, "the composer's emoji button again", mouseClick(`form.composer button[aria-label="Emoji"]`))
			waitFor(t, tab, "the picker", firstEmoji)
			do(t, tab, "click 🎉", mouseClick(`.emoji-picker .emoji-btn[data-c="🎉"]`))
			waitFor(t, tab, "🎉 in the composer", `document.querySelector('`+box+`').value === '🎉' && document.activeElement === document.querySelector('`+box+`')`)
			eval[bool](t, tab, `(b => (b.value = '', b.dispatchEvent(new Event('input', {bubbles: true})), true))(document.querySelector('`+box+`'))`)

			// :tada: typed becomes 🎉, and is sent so; `:` and two letters complete.
			shipped := fmt.Sprintf(":tada: shipped %d", w)
			send(t, tab, box, shipped)
			waitFor(t, tab, "the message sent with 🎉", hasBody(fmt.Sprintf("🎉 shipped %d", w)))
			do(t, tab, "type :thu", chromedp.SendKeys(box, ":thu"))
			waitFor(t, tab, "👍 offered first", `(o => o?.textContent === '👍:+1:' && o.getAttribute('aria-selected') === 'true')(document.querySelector('#complete-menu [role=option]'))`)
			do(t, tab, "take it", chromedp.KeyEvent(kb.Tab))
			waitFor(t, tab, "👍 in the box", `document.querySelector('`+box+`').value === '👍 '`)
			eval[bool](t, tab, `(b => (b.value = '', b.dispatchEvent(new Event('input', {bubbles: true})), true))(document.querySelector('`+box+`'))`)
			if w > 800 {
				// A reply pasted with a shortcode (no closing colon typed) is sent with the emoji.
				clickAction(t, tab, body, "Reply in thread")
				reply := `.thread-composer .compose-box`
				waitFor(t, tab, "the thread's composer, with its emoji button", `document.querySelector('.thread-composer button[aria-label="Emoji"]') && document.activeElement === document.querySelector('`+reply+`')`)
				eval[bool](t, tab, `(b => (b.value = 'pasted :rocket: reply', b.dispatchEvent(new Event('input', {bubbles: true})), true))(document.querySelector('`+reply+`'))`)
				do(t, tab, "send the reply", enter())
				waitFor(t, tab, "the reply with 🚀", `[...document.querySelectorAll('.thread-list .body')].some(b => b.textContent === 'pasted 🚀 reply')`)
				do(t, tab, "close the panel", mouseClick(`.panel-head button[aria-label="Close panel"]`))
			}
		})
	}
}
