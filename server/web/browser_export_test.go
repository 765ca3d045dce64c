package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserExportDownload: the workspace menu offers the owner, and only the owner, a download
// of the workspace's export (issue 28), which the browser fetches from the API with its cookie.
func TestBrowserExportDownload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ana, ben := e.person(t, "Ana Lima"), e.person(t, "Ben Okafor")
	ws := e.workspace(t, ana, "Acme")
	e.addMember(t, ws.ID, ben.user.ID)
	e.channel(t, ana, ws.ID, "general")
	b := newBrowser(t, e)
	aTab, bTab := b.tab(t, ana), b.tab(t, ben)
	for _, tab := range []context.Context{aTab, bTab} {
		do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
		waitFor(t, tab, "general to open", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
	}
	if menuHas(t, bTab, "Download export") {
		t.Fatal("a member is offered the owner's export")
	}
	if !menuHas(t, aTab, "Download export") {
		t.Fatal("the owner's menu lacks the export")
	}
	// The download itself is the browser's; the page's part is the link it follows, which the
	// test follows with fetch (same cookie) instead of saving a file.
	eval[bool](t, aTab, `(HTMLAnchorElement.prototype.click = function () {
		window.exported = this.getAttribute('href');
		fetch(this.href).then(r => { window.exportedAs = r.status + ' ' + r.headers.get('content-type'); });
	}, true)`)
	clickWhen(t, aTab, "the workspace menu", `document.querySelector('.ws-head button[aria-label="Workspace menu"]')`)
	clickWhen(t, aTab, "the menu entry", `[...document.querySelectorAll('.ws-head [role=menuitem]')].find(b => b.textContent === 'Download export')`)
	waitFor(t, aTab, "the archive fetched", `window.exportedAs === '200 application/zip'`)
	if got := eval[string](t, aTab, `window.exported`); !strings.HasSuffix(got, "/api/workspaces/"+ws.ID+"/export") {
		t.Fatalf("the download link is %q", got)
	}
}
