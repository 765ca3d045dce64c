package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowserBigSidebar (issue 24 item 6): in a workspace of 1,000 channels the sidebar draws
// only a window of its rows, yet the keyboard reaches a channel far down: Alt+↑ from the first
// place wraps to the last one (c-0999, the end of the Projects section), and Alt+Shift+↓ goes
// to the one unread channel (c-0998, the end of the unsectioned ones); each time that channel
// opens and its row is drawn, marked current and scrolled into the sidebar's view. At 1280×800
// and at 390×844, where the sidebar is a drawer, opened to look.
func TestBrowserBigSidebar(t *testing.T) {
	e := newEnv(t)
	ana := e.person(t, "Ana Lima")
	ws := e.workspace(t, ana, "Big")
	big := seedBigWorkspace(t, e, ana.user, ws.ID, 1000, 1, "")
	first, unread, last := big.channels[0], big.channels[998], big.channels[999]
	br := newBrowser(t, e)

	for _, size := range []struct{ w, h int64 }{{1280, 800}, {390, 844}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			// Unread again for each size: the last one read it.
			far := fmt.Sprintf("far down at %d px", size.w)
			big.post(t, e, big.people[0], unread.ID, far)
			tab := br.tab(t, ana)
			resize(t, tab, size.w, size.h)
			do(t, tab, "open c-0000", chromedp.Navigate(e.URL+"/"+ws.RouteID+"/"+first.RouteID))
			waitFor(t, tab, "c-0000 open", header+` === 'c-0000'`)
			waitFor(t, tab, "the sidebar drawn", `document.querySelector('.sidebar .place.active')`)
			rows := `document.querySelectorAll('.sidebar .place').length`
			if n := eval[int](t, tab, rows); n > 150 {
				t.Fatalf("the sidebar draws %d rows of 1,000 channels", n)
			}
			row := func(id string) string {
				return fmt.Sprintf(`document.querySelector('.sidebar .place[data-place=%q]')`, id)
			}
			if eval[bool](t, tab, `!!`+row(last.ID)) {
				t.Fatal("c-0999, a thousand rows down, is drawn on opening")
			}
			// shown: the row is drawn, current, and whole within the sidebar's scrolled list.
			shown := func(id string) string {
				return `(a => !!a && a.getAttribute('aria-current') === 'page' && (r => { const n = document.querySelector('.sidebar .places').getBoundingClientRect();
					return r.height > 0 && r.top >= n.top - 1 && r.bottom <= n.bottom + 1; })(a.getBoundingClientRect()))(` + row(id) + `)`
			}
			look := func(what, id string) {
				t.Helper()
				if size.w < 800 {
					do(t, tab, "open the drawer", mouseClick(`.conv-header button[aria-label="Channels and people"]`))
					waitFor(t, tab, "the drawer open", `document.body.classList.contains('drawer-open') && document.querySelector('.sidebar').getBoundingClientRect().left === 0`)
				}
				waitFor(t, tab, what+"'s row drawn and in view", shown(id))
				if n := eval[int](t, tab, rows); n > 150 {
					t.Fatalf("the sidebar draws %d rows at %s", n, what)
				}
				if size.w < 800 {
					do(t, tab, "close the drawer", key(kb.Escape))
					waitFor(t, tab, "the drawer closed", `!document.body.classList.contains('drawer-open')`)
				}
			}
			do(t, tab, "Alt+↑", key(kb.ArrowUp, chromedp.ModifierAlt))
			waitFor(t, tab, "the last place, c-0999", header+` === 'c-0999'`)
			look("c-0999", last.ID)
			do(t, tab, "Alt+Shift+↓", key(kb.ArrowDown, chromedp.ModifierAlt, chromedp.ModifierShift))
			waitFor(t, tab, "the unread channel, c-0998", header+` === 'c-0998'`)
			look("c-0998", unread.ID)
			waitFor(t, tab, "its message", fmt.Sprintf(`[...document.querySelectorAll('.list .msg .body')].some(b => b.textContent === %q)`, far))
		})
	}
}
