package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserThreads drives the Threads view (issue 30) at 1280×800 and 390×844: a reply in a
// thread Ana is in raises the badge of "Threads" in the sidebar while her page is open; the view
// lists the thread with its root, its latest replies and how many are new; another reply redraws
// it live; "Open thread" opens it in the thread panel, which marks it read on the server, and
// the badge goes. Ben then edits his reply in another thread to add @ana: the badge comes back.
func TestBrowserThreads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ana, ben := e.handled(t, "Ana Lima", "ana"), e.person(t, "Ben Okafor")
	ws := e.workspace(t, ana, "Acme")
	e.addMember(t, ws.ID, ben.user.ID)
	general := e.channel(t, ana, ws.ID, "general")
	e.api(t, ana, "POST", "/api/channels/"+general.ID+"/messages", map[string]string{"body": "Welcome"}, nil)
	b := newBrowser(t, e)

	for _, size := range []struct{ w, h int64 }{{1280, 800}, {390, 844}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			narrow := size.w <= 800
			name := fmt.Sprintf("launch-%d", size.w)
			ch := e.channel(t, ana, ws.ID, name)
			var root struct{ Message struct{ ID string } }
			e.api(t, ana, "POST", "/api/channels/"+ch.ID+"/messages", map[string]string{"body": "Launch plan for " + name}, &root)
			reply := func(p person, body string) {
				e.api(t, p, "POST", "/api/messages/"+root.Message.ID+"/thread/replies", map[string]string{"body": body}, nil)
			}
			reply(ben, "Copy is ready")
			reply(ana, "Thanks, I read it")

			tab := b.tab(t, ana)
			resize(t, tab, size.w, size.h)
			do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
			waitFor(t, tab, "general open", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
			waitFor(t, tab, "the socket to connect", `document.querySelector('.me .dot.online')`)
			threadsLink := `[...document.querySelectorAll('.sidebar button.view-link')].find(b => b.querySelector('.label')?.textContent === 'Threads')`
			if eval[bool](t, tab, `!!`+threadsLink+`?.querySelector('.badge')`) {
				t.Fatalf("a badge with nothing unread")
			}

			// A reply by Ben, in a thread Ana started and replied in, arrives over the socket.
			reply(ben, "Legal signed off")
			waitFor(t, tab, "the Threads badge", threadsLink+`?.querySelector('.badge')?.textContent === '1'`)

			if narrow {
				do(t, tab, "open the drawer", mouseClick(`.conv-header button[aria-label="Channels and people"]`))
				waitFor(t, tab, "the drawer open", `document.body.classList.contains('drawer-open') && document.querySelector('.sidebar').getBoundingClientRect().left === 0`)
			}
			eval[bool](t, tab, threadsLink+`.click() ?? true`)
			item := `document.querySelector('.panel .threads .thread-item')`
			waitFor(t, tab, "the thread listed with one new reply", item+`?.querySelector('.badge')?.textContent === '1 new'`)
			bodies := func() string {
				return eval[string](t, tab, `[...`+item+`.querySelectorAll('.msg .body')].map(b => b.textContent).join(' | ')`)
			}
			if got, want := bodies(), "Launch plan for "+name+" | Copy is ready | Thanks, I read it | Legal signed off"; got != want {
				t.Fatalf("the thread shows %q, want %q", got, want)
			}
			if got := eval[string](t, tab, item+`.querySelector('.result-head').textContent`); got != "#"+name {
				t.Fatalf("the thread's place reads %q", got)
			}
			if eval[bool](t, tab, `document.documentElement.scrollWidth > innerWidth`) {
				t.Fatalf("the view scrolls sideways at %d px", size.w)
			}

			// Live: another reply redraws the open list.
			reply(ben, "Press release queued")
			waitFor(t, tab, "the list redrawn with two new", item+`?.querySelector('.badge')?.textContent === '2 new' && `+
				item+`.textContent.includes('Press release queued') && `+item+`.textContent.includes('1 more reply')`)
			shot(t, tab, fmt.Sprintf("threads-%d", size.w))
			if !narrow {
				checkA11y(t, tab, "the Threads view")
			}

			// Opening it marks it read, on the server too, and the badge goes.
			do(t, tab, "open the thread", mouseClick(`.panel .threads .open-thread`))
			waitFor(t, tab, "the thread panel", `document.querySelector('#panel-title').textContent === 'Thread' && [...document.querySelectorAll('.panel .thread-list .msg .body')].some(b => b.textContent === 'Press release queued')`)
			waitFor(t, tab, "no badge", `!`+threadsLink+`?.querySelector('.badge')`)
			var page struct {
				UnreadThreads int `json:"unread_threads"`
				Threads       []struct {
					UnreadCount int `json:"unread_count"`
				}
			}
			e.api(t, ana, "GET", "/api/workspaces/"+ws.ID+"/threads", nil, &page)
			if page.UnreadThreads != 0 || len(page.Threads) == 0 || page.Threads[0].UnreadCount != 0 {
				t.Fatalf("after opening, the server says %+v", page)
			}

			// Ben's edit adding @ana to his reply in a thread she is not in makes her follow it.
			var other, answer struct{ Message struct{ ID string } }
			e.api(t, ben, "POST", "/api/channels/"+ch.ID+"/messages", map[string]string{"body": "Who checks the numbers?"}, &other)
			e.api(t, ben, "POST", "/api/messages/"+other.Message.ID+"/thread/replies", map[string]string{"body": "Not me"}, &answer)
			e.api(t, ben, "PATCH", "/api/messages/"+answer.Message.ID, map[string]string{"body": "Not me: @ana?"}, nil)
			waitFor(t, tab, "the Threads badge for the thread the edit put her in", threadsLink+`?.querySelector('.badge')?.textContent === '1'`)
			e.api(t, ana, "POST", "/api/messages/"+other.Message.ID+"/thread/read", map[string]int{"seq": 1}, nil) // the next size starts clean
		})
	}
}
