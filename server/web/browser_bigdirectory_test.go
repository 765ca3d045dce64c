package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowserBigDirectory (issue 24 item 6): in a workspace of 1,000 channels and 300 people the
// quick switcher still finds a channel and a person by prefix and by a piece inside, showing 30
// matches at most; the member directory draws only the rows near its viewport, builds no
// person's controls until their row opens, and the keyboard still reaches the 40th person (Tab
// after Tab from the search field), opens the row with Enter and goes on into its controls; the
// People panel draws a window of its rows too, and Tab reaches the 39th offline person's
// Message button. At 1280×800 and at 390×844.
func TestBrowserBigDirectory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ana := e.person(t, "Ana Lima")
	ws := e.workspace(t, ana, "Big")
	big := seedBigWorkspace(t, e, ana.user, ws.ID, 1000, 300, "q")
	br := newBrowser(t, e)

	for _, size := range []struct{ w, h int64 }{{1280, 800}, {390, 844}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			tab := br.tab(t, ana)
			resize(t, tab, size.w, size.h)
			do(t, tab, "open c-0000", chromedp.Navigate(e.URL+"/"+ws.RouteID+"/"+big.channels[0].RouteID))
			waitFor(t, tab, "c-0000 open", header+` === 'c-0000'`)
			bigSwitcher(t, tab)
			bigDirectory(t, tab)
			bigPeople(t, tab)
		})
	}
}

// bigSwitcher: a prefix and a piece inside find a channel and a person.
func bigSwitcher(t *testing.T, tab context.Context) {
	first := `document.querySelector('.qs-item.sel')?.dataset.kind + ':' + document.querySelector('.qs-item.sel .qs-label')?.textContent`
	search := func(typed, want string) {
		t.Helper()
		eval[bool](t, tab, `(i => (i.value = '', i.dispatchEvent(new Event('input')), true))(document.querySelector('.qs-input'))`)
		do(t, tab, "type "+typed, chromedp.SendKeys(".qs-input", typed))
		waitKeys(t, tab, typed+" finds "+want, first+` === `+fmt.Sprintf("%q", want))
	}
	do(t, tab, "Ctrl+K", key("k", chromedp.ModifierCtrl))
	waitFor(t, tab, "the switcher", active+`.classList.contains('qs-input')`)
	do(t, tab, "type c", chromedp.SendKeys(".qs-input", "c"))
	waitKeys(t, tab, "c-0000 first of 30", first+` === 'channel:c-0000' && document.querySelectorAll('.qs-item').length === 30`)
	search("c-099", "channel:c-0990")
	search("0998", "channel:c-0998")
	// People come from the directory (the server matches names and handles by substring).
	search("grace person 6", "person:Grace Person 6")
	search("idq18", "person:Farid Person 18")
	search("c-0998", "channel:c-0998")
	do(t, tab, "Enter", key(kb.Enter))
	waitFor(t, tab, "c-0998 open", header+` === 'c-0998'`)
}

// bigDirectory: a window of rows, controls built on opening, every row reachable by Tab.
func bigDirectory(t *testing.T, tab context.Context) {
	openMenu(t, tab, "Members and moderation")
	rows := `document.querySelectorAll('.mod-list li.mod-member')`
	waitFor(t, tab, "a page of 100 people", rows+`[0]?.getAttribute('aria-setsize') === '100'`)
	if n := eval[int](t, tab, rows+`.length`); n > 40 {
		t.Fatalf("the directory draws %d rows of 100", n)
	}
	if n := eval[int](t, tab, `document.querySelectorAll('.mod-list select, .mod-list textarea, .mod-list .mod-controls *').length`); n != 0 {
		t.Fatalf("closed rows hold %d controls", n)
	}
	// Ana (the owner, first) has no controls; the search field, the role filter and then one
	// row after another: the 40th person is 40 Tabs away.
	eval[bool](t, tab, `(document.querySelector('.panel input[type=search]').focus(), true)`)
	do(t, tab, "Tab ×40", chromedp.KeyEvent(strings.Repeat(kb.Tab, 40)))
	focused := active + `.closest('li.mod-member')`
	waitKeys(t, tab, "the 40th row's summary focused and in view", `(li => !!li && li.getAttribute('aria-posinset') === '40' && `+active+`.tagName === 'SUMMARY'
		&& (r => { const p = document.querySelector('.panel-body').getBoundingClientRect(); return r.top >= p.top - 1 && r.bottom <= p.bottom + 1; })(`+active+`.getBoundingClientRect()))(`+focused+`)`)
	name := eval[string](t, tab, focused+`.querySelector('.author').textContent`)
	do(t, tab, "Enter opens the row", key(kb.Enter))
	waitFor(t, tab, "its controls", focused+`.querySelector('details[open] select.mod-role')`)
	do(t, tab, "Tab into them", key(kb.Tab))
	waitKeys(t, tab, "the role of "+name, active+`.getAttribute('aria-label') === `+fmt.Sprintf("%q", "Role of "+name))
	if n := eval[int](t, tab, rows+`.length`); n > 40 {
		t.Fatalf("the directory draws %d rows after 40 Tabs", n)
	}
	checkA11y(t, tab, "windowed directory")
	// The end of the page: its last row drawn, the first ones gone, and More people after it.
	eval[bool](t, tab, `(b => (b.scrollTop = b.scrollHeight, true))(document.querySelector('.panel-body'))`)
	waitFor(t, tab, "the 100th row", `!!document.querySelector('.mod-list li.mod-member[aria-posinset="100"]') && !document.querySelector('.mod-list li.mod-member[aria-posinset="1"]')`)
	clickWhen(t, tab, "More people", `[...document.querySelectorAll('.panel button')].find(b => b.textContent === 'More people')`)
	waitFor(t, tab, "200 people", rows+`[0]?.getAttribute('aria-setsize') === '200'`)
	clickWhen(t, tab, "close", `document.querySelector('.panel button[aria-label="Close panel"]')`)
}

// bigPeople: the People panel (Ana online, 99 others offline on its first page) is windowed too.
func bigPeople(t *testing.T, tab context.Context) {
	openMenu(t, tab, "People")
	offline := `document.querySelectorAll('.panel ul.people')[1]`
	waitFor(t, tab, "99 offline", offline+`?.querySelector('li.person')?.getAttribute('aria-setsize') === '99'`)
	if n := eval[int](t, tab, `document.querySelectorAll('.panel li.person').length`); n > 40 {
		t.Fatalf("the People panel draws %d rows of 100", n)
	}
	// From the search field: Ana's name and Message button, then each offline row's name and
	// Message button (names open the profile card from the keyboard): 2 + 2×39 Tabs.
	eval[bool](t, tab, `(document.querySelector('.panel input[type=search]').focus(), true)`)
	do(t, tab, "Tab ×80", chromedp.KeyEvent(strings.Repeat(kb.Tab, 80)))
	waitKeys(t, tab, "the 39th offline person's Message", `(li => !!li && li.getAttribute('aria-posinset') === '39' && `+active+`.textContent === 'Message'
		&& (r => { const p = document.querySelector('.panel-body').getBoundingClientRect(); return r.top >= p.top - 1 && r.bottom <= p.bottom + 1; })(`+active+`.getBoundingClientRect()))(`+active+`.closest('li.person'))`)
	clickWhen(t, tab, "close", `document.querySelector('.panel button[aria-label="Close panel"]')`)
}
