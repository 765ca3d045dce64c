package web_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/server"
)

// The spec's client limits for previews (SPEC §Limits, "Artifact preview"), as literals.
const (
	kib            = 1024
	mib            = 1024 * kib
	textLimit      = 2 * mib // text, code, Markdown and HTML
	highlightLimit = 256 * kib
	ooxmlLimit     = 24 * mib // compressed
	expandedLimit  = 12 * mib
)

// previews posts files as Ana and opens their previews in her tab.
type previews struct {
	e      *env
	ana    person
	wsID   string
	chID   string
	tab    context.Context
	posted int
}

// upload stores data as a file of the workspace through the API (multipart, as the client does).
func (p *previews) upload(t testing.TB, name, ctype string, data []byte) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="file"; filename=%q`, name)}
	h["Content-Type"] = []string{ctype}
	part, err := mw.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = part.Write(data)
	_ = mw.Close()
	req, _ := http.NewRequest("POST", p.e.URL+"/api/uploads?workspace_id="+p.wsID, &body)
	req.Header.Set("Authorization", "Bearer "+p.ana.token)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("upload %s: %v", name, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out struct{ Upload struct{ ID string } }
	if res.StatusCode != http.StatusCreated || json.Unmarshal(raw, &out) != nil || out.Upload.ID == "" {
		t.Fatalf("upload %s: %d %s", name, res.StatusCode, raw)
	}
	return out.Upload.ID
}

// open posts the file in a message and opens its preview; it returns once the preview has
// settled (shown or fallen back), with the panel's state: "shown" or "fallback".
func (p *previews) open(t *testing.T, name, ctype string, data []byte) string {
	t.Helper()
	id := p.upload(t, name, ctype, data)
	p.posted++
	label := fmt.Sprintf("file %d: %s", p.posted, name)
	p.e.api(t, p.ana, "POST", "/api/channels/"+p.chID+"/messages", map[string]string{"body": label, "upload_id": id}, nil)
	row := fmt.Sprintf(`[...document.querySelectorAll('.list .msg')].find(m => m.querySelector('.body')?.textContent === %q)`, label)
	waitFor(t, p.tab, label+" with its Preview button", row+`?.querySelector('.preview-open')`)
	eval[bool](t, p.tab, row+`.querySelector('.preview-open').click() || true`)
	waitFor(t, p.tab, "the preview of "+name, fmt.Sprintf(`(b => b && b.querySelector('.preview-name')?.textContent === %q && b.dataset.state)(document.querySelector('.panel .preview'))`, name))
	return eval[string](t, p.tab, `document.querySelector('.panel .preview').dataset.state`)
}

func (p *previews) want(t *testing.T, name, ctype string, data []byte, state string) {
	t.Helper()
	if got := p.open(t, name, ctype, data); got != state {
		t.Fatalf("%s (%d bytes): the preview is %q, want %q; it says %q", name, len(data), got, state, p.said(t))
	}
}

// said is the text the preview panel shows (its first 300 characters).
func (p *previews) said(t *testing.T) string {
	return eval[string](t, p.tab, `(document.querySelector('.panel .preview-stage')?.textContent || '').slice(0, 300)`)
}

// fallsBack checks the preview fell back to the authenticated download, saying why.
func (p *previews) fallsBack(t *testing.T, name, ctype string, data []byte, why string) {
	t.Helper()
	p.want(t, name, ctype, data, "fallback")
	if got := p.said(t); !strings.Contains(got, why) {
		t.Fatalf("%s: the fallback says %q, want it to mention %q", name, got, why)
	}
	href := eval[string](t, p.tab, `document.querySelector('.panel .preview-fallback a[download]')?.getAttribute('href') || ''`)
	if !strings.HasPrefix(href, "/api/uploads/") {
		t.Fatalf("%s: the fallback offers no download link (%q)", name, href)
	}
}

// TestBrowserPreviews opens attachment previews at each of the spec's limits, with a file just
// under and just over each, plus malformed files, HTML with script, and the time limits.
func TestBrowserPreviews(t *testing.T) {
	t.Parallel()
	// Remote images are allowed to the page (the operator's --remote-avatars), so the HTML
	// preview's control frame can reach its image server and the preview's own block is what is
	// tested, not the page's stricter default img-src.
	e := newEnv(t, func(c *server.Config) { c.RemoteAvatars = true })
	ana := e.person(t, "Ana Lima")
	ws := e.workspace(t, ana, "Acme")
	ch := e.channel(t, ana, ws.ID, "files")

	b := newBrowser(t, e)
	tab := b.tab(t, ana)
	do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
	waitFor(t, tab, "the channel", `document.querySelector('.conv-header h1')?.textContent === 'files'`)
	// Every policy violation on the page is recorded: previews must need nothing the page's
	// Content-Security-Policy does not allow (workers, frames).
	eval[bool](t, tab, `(window.__violations = [], document.addEventListener('securitypolicyviolation', e => __violations.push(e.violatedDirective + ' ' + e.blockedURI)), true)`)
	p := &previews{e: e, ana: ana, wsID: ws.ID, chID: ch.ID, tab: tab}

	if n := eval[int](t, tab, `performance.getEntriesByType('resource').filter(r => r.name.includes('/assets/js/lazy/')).length`); n != 0 {
		t.Fatalf("the page fetched %d lazy modules before any preview", n)
	}

	t.Run("Text", func(t *testing.T) { textLimits(t, p) })
	t.Run("Markdown", func(t *testing.T) { markdownPreview(t, p) })
	t.Run("HTML", func(t *testing.T) { htmlPreview(t, p, b) })
	t.Run("Highlight", func(t *testing.T) { highlightLimits(t, p) })
	t.Run("Office", func(t *testing.T) { officeLimits(t, p) })
	t.Run("OfficeMalformed", func(t *testing.T) { officeMalformed(t, p) })
	t.Run("PDFAndDOCX", func(t *testing.T) { pdfAndDocx(t, p) })

	if v := eval[[]string](t, tab, `__violations`); len(v) != 0 {
		t.Fatalf("the page's policy refused: %v", v)
	}
}

// lines is n bytes of text, the same line repeated, ASCII only, so bytes and characters agree.
func lines(n int, line string) []byte {
	return bytes.Repeat([]byte(line+"\n"), n/(len(line)+1)+1)[:n]
}

func textLimits(t *testing.T, p *previews) {
	data := lines(textLimit, "The quick brown fox jumps over the lazy dog.")
	p.want(t, "notes.txt", "text/plain", data, "shown")
	if n := eval[int](t, p.tab, `document.querySelector('.panel .preview-text').textContent.length`); n != textLimit {
		t.Fatalf("the text preview shows %d characters, want all %d", n, textLimit)
	}
	shot(t, p.tab, "preview-text")
	p.fallsBack(t, "notes-big.txt", "text/plain", lines(textLimit+1, "line"), "2 MiB")
	shot(t, p.tab, "preview-fallback")
}

func markdownPreview(t *testing.T, p *previews) {
	md := "# Release notes\n\nThe **fast** path and the _slow_ one.\n\n- first\n- second\n\n<img src=x onerror=alert(1)>\n\n" +
		"[site](https://example.com/a) and [x](javascript:alert(1))\n"
	p.want(t, "notes.md", "text/markdown", []byte(md), "shown")
	if got := eval[string](t, p.tab, `document.querySelector('.panel .preview-md').dataset.render`); got != "done" {
		t.Fatalf("the Markdown preview is %q, want done", got)
	}
	if got := eval[string](t, p.tab, `[...document.querySelectorAll('.panel .preview-md strong, .panel .preview-md li')].map(e => e.textContent).join('|')`); got != "fast|first|second" {
		t.Fatalf("the Markdown preview renders %q", got)
	}
	if n := eval[int](t, p.tab, `document.querySelectorAll('.panel .preview-md img').length`); n != 0 {
		t.Fatalf("markup in a Markdown file became %d img elements", n)
	}
	// Links are rebuilt as markdown.js makes them: http(s) only, a new tab, no opener.
	if got := eval[string](t, p.tab, `[...document.querySelectorAll('.panel .preview-md a')].map(a => a.href + ' ' + a.target + ' ' + a.rel).join('|')`); got != "https://example.com/a _blank noopener noreferrer" {
		t.Fatalf("the Markdown preview's links: %q", got)
	}
	shot(t, p.tab, "preview-markdown")

	// 2 MiB of prose (long lines, a little markup) is rendered; one byte more is not previewed.
	prose := "The **quick** brown fox jumps over the lazy dog, " + strings.Repeat("and over the lazy dog again, ", 60)
	p.want(t, "book.md", "text/markdown", lines(textLimit, prose+"\n"), "shown")
	if got := eval[string](t, p.tab, `(b => b.dataset.render + ' ' + (b.querySelectorAll('p').length > 1000) + ' ' + b.querySelector('strong')?.textContent)(document.querySelector('.panel .preview-md'))`); got != "done true quick" {
		t.Fatalf("2 MiB of Markdown: %q, want it rendered", got)
	}
	p.fallsBack(t, "book-big.md", "text/markdown", lines(textLimit+1, prose+"\n"), "2 MiB")
	// One line of 2 MiB of code spans costs the renderer time that grows with the square of the
	// line: it is stopped after 5 seconds and the file shown as plain text, the page never frozen.
	dense := bytes.Repeat([]byte("`a` "), textLimit/4)
	p.want(t, "dense.md", "text/markdown", dense, "shown")
	if got := eval[string](t, p.tab, `document.querySelector('.panel .preview-md').dataset.render`); got != "timeout" {
		t.Fatalf("a slow Markdown file: %q, want timeout", got)
	}
	if got := p.said(t); !strings.Contains(got, "5 seconds") {
		t.Fatalf("the timed-out Markdown preview says %q", got)
	}
	if n := eval[int](t, p.tab, `document.querySelector('.panel .preview-md pre').textContent.length`); n != len(dense) {
		t.Fatalf("the plain text shows %d characters, want %d", n, len(dense))
	}
	noWorkers(t, p.tab)
}

// scriptedHTML would, if any of its script ran, post a message to the page and rewrite its
// heading.
const scriptedHTML = `<!doctype html><html><body onload="parent.postMessage('onload ran', '*')">
<h1 id="t">Quarterly report</h1><p>Revenue <b>grew</b> in every region.</p>
<script>document.getElementById('t').textContent = 'SCRIPT RAN'; parent.postMessage('script ran', '*');</script>
<img src="x" onerror="parent.postMessage('onerror ran', '*')"></body></html>`

// htmlPreview: uploaded HTML shows in a frame sandboxed with no script. A second tab ignores
// the page's Content-Security-Policy (which would also stop inline script) so the sandbox alone
// is tested, and a frame allowed to run script shows the test would see it if it did.
func htmlPreview(t *testing.T, p *previews, b *browser) {
	// Each message is recorded with whether it came from the control frame (window.__control).
	listen := `(window.__posted = [], addEventListener('message', e => __posted.push((window.__control && e.source === __control.contentWindow ? 'control: ' : 'preview: ') + e.data)), true)`
	eval[bool](t, p.tab, listen)
	p.want(t, "report.html", "text/html", []byte(scriptedHTML), "shown")
	if got := eval[string](t, p.tab, `document.querySelector('.panel iframe.preview-html').getAttribute('sandbox')`); got != "" {
		t.Fatalf("the HTML frame's sandbox is %q, want empty (no script, no same origin)", got)
	}
	shot(t, p.tab, "preview-html")

	bare := b.tab(t, p.ana)
	do(t, bare, "ignore the page's policy", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true})
		return err
	}), chromedp.Navigate(p.e.URL+"/"))
	waitFor(t, bare, "the channel", `document.querySelector('.conv-header h1')?.textContent === 'files'`)
	eval[bool](t, bare, listen)
	q := &previews{e: p.e, ana: p.ana, wsID: p.wsID, chID: p.chID, tab: bare, posted: p.posted}
	q.want(t, "report-again.html", "text/html", []byte(scriptedHTML), "shown")
	p.posted = q.posted
	// The control: the same document in a frame that may run script reports at once.
	eval[bool](t, bare, fmt.Sprintf(`(f => (window.__control = f, f.setAttribute('sandbox', 'allow-scripts'), f.srcdoc = %q, document.body.append(f), true))(document.createElement('iframe'))`, scriptedHTML))
	waitFor(t, bare, "the control frame's script and handlers", `['script', 'onerror', 'onload'].every(s => __posted.includes('control: ' + s + ' ran'))`)
	eval[bool](t, bare, `(__control.remove(), true)`)
	for _, tab := range []context.Context{p.tab, bare} {
		if got := eval[[]string](t, tab, `__posted.filter(m => !m.startsWith('control: '))`); len(got) != 0 {
			t.Fatalf("script in the HTML preview ran: %v", got)
		}
	}
	p.fallsBack(t, "report-big.html", "text/html", lines(textLimit+1, "<p>row</p>"), "2 MiB")
	remoteImages(t, p)
}

// remoteImages: a previewed HTML file fetches nothing from elsewhere (no tracking pixel learns
// who opened it), though the page itself may show https images (avatars). Each server counts
// the connections made to it; a frame's load event comes after its images were tried. The
// control, the same document in a frame with the same sandbox but without the preview's policy,
// shows such images would be fetched.
func remoteImages(t *testing.T, p *previews) {
	counting := func() (*httptest.Server, *atomic.Int32) {
		var n atomic.Int32
		srv := httptest.NewUnstartedServer(http.NotFoundHandler())
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				n.Add(1)
			}
		}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv, &n
	}
	tracker, tracked := counting()
	control, controlled := counting()
	doc := func(base string) string {
		return fmt.Sprintf(`<p>Newsletter</p><img src="%s/pixel.png" alt="pixel"><img srcset="%s/pixel-2x.png 2x" alt="pixel">`, base, base)
	}
	// The preview's frame is watched for its load event from the moment it appears.
	eval[bool](t, p.tab, `(window.__previewLoaded = false, new MutationObserver(() => document.querySelectorAll('.panel iframe.preview-html').forEach(f => {
		if (!f.__watched) { f.__watched = true; f.addEventListener('load', () => { __previewLoaded = true; }); } })).observe(document.body, { subtree: true, childList: true }), true)`)
	p.want(t, "newsletter.html", "text/html", []byte(doc(tracker.URL)), "shown")
	waitFor(t, p.tab, "the preview frame loaded", `__previewLoaded`)
	eval[bool](t, p.tab, fmt.Sprintf(`(f => (window.__controlLoaded = false, f.addEventListener('load', () => { __controlLoaded = true; }),
		f.setAttribute('sandbox', ''), f.srcdoc = %q, document.body.append(f), true))(document.createElement('iframe'))`, doc(control.URL)))
	waitFor(t, p.tab, "the control frame loaded", `__controlLoaded`)
	for i := 0; controlled.Load() == 0; i++ {
		if i > int(waitLimit/(50*time.Millisecond)) {
			t.Fatal("the control frame's images never reached their server")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The control frame is the test's, not the client's: it leaves the page it was put in.
	eval[bool](t, p.tab, `[...document.querySelectorAll('body > iframe')].forEach(f => f.remove()) ?? true`)
	if n := tracked.Load(); n != 0 {
		t.Fatalf("the HTML preview made %d connections to another server", n)
	}
}

// goSource is n bytes of Go, a function repeated.
func goSource(n int) []byte {
	var b bytes.Buffer
	b.WriteString("package main\n\nimport \"fmt\"\n\n")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "// add%d adds.\nfunc add%d(a, b int) int {\n\tif a > %d {\n\t\treturn a - b // smaller\n\t}\n\tfmt.Println(\"sum\", a+b)\n\treturn a + b\n}\n\n", i, i, i)
	}
	return b.Bytes()[:n]
}

// highlighted is the state the code preview reports (data-highlight) and its token count.
func highlighted(t *testing.T, p *previews) (string, int) {
	waitFor(t, p.tab, "highlighting to settle", `document.querySelector('.panel .preview-code')?.dataset.highlight !== 'pending'`)
	return eval[string](t, p.tab, `document.querySelector('.panel .preview-code').dataset.highlight`),
		eval[int](t, p.tab, `document.querySelectorAll('.panel .preview-code span[class^=tok-]').length`)
}

// highlightTime sets the client's highlighting time limit (the spec's 2 seconds) in the page's
// own instance of lazy/preview.js, loaded by a preview already opened. Whether a file is
// highlighted or capped must not depend on how busy the machine is: those cases run with a
// minute; the case that is about the time limit runs with the spec's 2 seconds.
func highlightTime(t *testing.T, p *previews, ms int) {
	t.Helper()
	if !eval[bool](t, p.tab, fmt.Sprintf(`(async () => {
		const e = performance.getEntriesByType('resource').find(r => new URL(r.name).pathname.endsWith('/lazy/preview.js'));
		if (!e) return false;
		(await import(e.name)).limits.highlightMs = %d;
		return true;
	})()`, ms)) {
		t.Fatal("lazy/preview.js is not loaded")
	}
}

func highlightLimits(t *testing.T, p *previews) {
	// A small file first: it loads the preview module, whose time limit then becomes a minute.
	p.want(t, "first.go", "text/x-go", goSource(1<<10), "shown")
	highlightTime(t, p, 60_000)
	src := goSource(highlightLimit)
	p.want(t, "main.go", "text/x-go", src, "shown")
	if state, n := highlighted(t, p); state != "done" || n == 0 {
		t.Fatalf("256 KiB of Go: highlighting %q with %d tokens, want done", state, n)
	}
	if got := eval[string](t, p.tab, `document.querySelector('.panel .preview-code').textContent`); got != string(src) {
		t.Fatalf("the highlighted code reads differently from the file (%d characters, want %d)", len(got), len(src))
	}
	if got := eval[string](t, p.tab, `[...document.querySelectorAll('.panel .preview-code .tok-k')].slice(0, 3).map(e => e.textContent).join(' ')`); got != "package import func" {
		t.Fatalf("the first keywords are %q", got)
	}
	eval[bool](t, p.tab, `(document.querySelector('.panel .preview-stage').scrollTop = 0, true)`)
	shot(t, p.tab, "preview-code")
	// axe checks the contrast of every token: on 256 KiB of code that is minutes under -race, so
	// the view is checked on a small file of the same code.
	p.want(t, "small.go", "text/x-go", goSource(4<<10), "shown")
	if state, n := highlighted(t, p); state != "done" || n == 0 {
		t.Fatalf("4 KiB of Go: highlighting %q with %d tokens, want done", state, n)
	}
	checkA11y(t, p.tab, "preview code")

	// One byte over: shown, not highlighted.
	p.want(t, "main-big.go", "text/x-go", goSource(highlightLimit+1), "shown")
	if state, n := highlighted(t, p); state != "too-large" || n != 0 {
		t.Fatalf("256 KiB + 1 of Go: highlighting %q with %d tokens, want too-large and none", state, n)
	}
	// Unterminated comments ("/* " with no "*/" anywhere), each rescanned to the end, keep the
	// tokenizer busy far past 2 seconds: the worker is stopped and the text stays plain.
	highlightTime(t, p, 2000)
	p.want(t, "comments.js", "text/javascript", bytes.Repeat([]byte("/* "), highlightLimit/3+1)[:highlightLimit], "shown")
	if state, n := highlighted(t, p); state != "timeout" || n != 0 {
		t.Fatalf("a slow file: highlighting %q with %d tokens, want timeout", state, n)
	}
	if got := p.said(t); !strings.Contains(got, "2 seconds") {
		t.Fatalf("the timed-out preview says %q", got)
	}
	noWorkers(t, p.tab)
	// Every character its own token: the runs would pass 2 MiB of output.
	highlightTime(t, p, 60_000)
	p.want(t, "dense.js", "text/javascript", bytes.Repeat([]byte("1+"), highlightLimit/2), "shown")
	if state, n := highlighted(t, p); state != "output-cap" || n != 0 {
		t.Fatalf("a dense file: highlighting %q with %d tokens, want output-cap", state, n)
	}
	if got := p.said(t); !strings.Contains(got, "2 MiB") {
		t.Fatalf("the capped preview says %q", got)
	}
	p.fallsBack(t, "huge.go", "text/x-go", goSource(textLimit+1), "2 MiB")
}

const (
	ctXLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	ctPPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
	ctDOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
)

func officeLimits(t *testing.T, p *previews) {
	p.want(t, "sales.xlsx", ctXLSX, xlsx(t, salesSheet), "shown")
	rows := `[...document.querySelectorAll('.panel .preview-sheet tbody tr')].map(r => [...r.querySelectorAll('td')].map(c => c.textContent).join(',')).join('|')`
	if got := eval[string](t, p.tab, rows); got != "Region,Revenue,Target met|North & East,1250.5,TRUE|South,980,FALSE" {
		t.Fatalf("the sheet reads %q", got)
	}
	shot(t, p.tab, "preview-xlsx")
	checkA11y(t, p.tab, "preview xlsx")
	p.want(t, "plan.pptx", ctPPTX, pptx(t, "Q3 plan\nShip the previews", "Risks &amp; dates"), "shown")
	slides := `[...document.querySelectorAll('.panel .preview-slide')].map(s => [...s.querySelectorAll('p')].map(p => p.textContent).join('/')).join('|')`
	if got := eval[string](t, p.tab, slides); got != "Q3 plan/Ship the previews|Risks & dates" {
		t.Fatalf("the slides read %q", got)
	}
	shot(t, p.tab, "preview-pptx")
	checkA11y(t, p.tab, "preview pptx")

	// 24 MiB on disk (a picture the preview never expands) is read; one byte more is not.
	p.want(t, "photos.xlsx", ctXLSX, sizedXLSX(t, ooxmlLimit), "shown")
	p.fallsBack(t, "photos-big.xlsx", ctXLSX, sizedXLSX(t, ooxmlLimit+1), "24 MiB")
	// Parts that expand to 12 MiB are read (the first rows shown); one byte more stops the
	// reader however small the file is.
	under := expandingXLSX(t, expandedLimit)
	if len(under) >= expandedLimit/4 {
		t.Fatalf("the expanding workbook is %d bytes compressed, want a small file that expands", len(under))
	}
	p.want(t, "bomb.xlsx", ctXLSX, under, "shown")
	if got := eval[string](t, p.tab, `document.querySelector('.panel .preview-sheet .preview-note')?.textContent || ''`); !strings.HasPrefix(got, "Showing 500 of ") {
		t.Fatalf("the 12 MiB sheet says %q, want the rows it shows out of all", got)
	}
	p.fallsBack(t, "bomb-big.xlsx", ctXLSX, expandingXLSX(t, expandedLimit+1), "12 MiB")
	// What the archive claims does not count, what the data expands to does: a sheet whose
	// header says 100 bytes but that inflates past 12 MiB is stopped all the same.
	p.fallsBack(t, "liar.xlsx", ctXLSX, lyingXLSX(t, expandedLimit+1), "12 MiB")
	// A tag that is one long run with no '=' keeps the attribute reader busy far past 5
	// seconds: the worker is stopped and the download offered.
	slow := `<worksheet ` + nsMain + `><sheetData><row><c ` + strings.Repeat("a", 2*mib) + `/></row></sheetData></worksheet>`
	p.fallsBack(t, "slow.xlsx", ctXLSX, xlsx(t, slow), "5 seconds")
	noWorkers(t, p.tab)
}

func officeMalformed(t *testing.T, p *previews) {
	good := xlsx(t, salesSheet)
	p.fallsBack(t, "truncated.xlsx", ctXLSX, good[:len(good)*2/3], "could not be read")
	rng := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 4096)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	p.fallsBack(t, "noise.xlsx", ctXLSX, noise, "could not be read")
	// A sound archive whose sheet is not deflate data.
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, part := range workbookParts() {
		w, _ := zw.Create(part.name)
		_, _ = w.Write(part.data)
	}
	w, _ := zw.CreateRaw(&zip.FileHeader{Name: "xl/worksheets/sheet1.xml", Method: zip.Deflate, CompressedSize64: uint64(len(noise)), UncompressedSize64: 9000})
	_, _ = w.Write(noise)
	_ = zw.Close()
	p.fallsBack(t, "corrupt.xlsx", ctXLSX, b.Bytes(), "could not be read")
	p.fallsBack(t, "unclosed.xlsx", ctXLSX, xlsx(t, `<worksheet `+nsMain+`><sheetData><row><c><v>1</v></c>`), "could not be read")
	p.fallsBack(t, "empty.pptx", ctPPTX, zipOf(t, zipPart{name: "hello.txt", data: []byte("hi")}), "could not be read")
	// Parts the package names but does not hold: a sheet, a slide.
	var book []zipPart
	for _, part := range workbookParts() {
		if part.name != "xl/sharedStrings.xml" {
			book = append(book, part)
		}
	}
	p.fallsBack(t, "sheetless.xlsx", ctXLSX, zipOf(t, book...), "could not be read")
	deck := pptx(t, "one", "two")
	p.fallsBack(t, "truncated.pptx", ctPPTX, deck[:len(deck)/2], "could not be read")
	var parts []zipPart
	zr, err := zip.NewReader(bytes.NewReader(deck), int64(len(deck)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Name == "ppt/slides/slide2.xml" {
			continue
		}
		rc, _ := f.Open()
		data, _ := io.ReadAll(rc)
		parts = append(parts, zipPart{name: f.Name, data: data})
	}
	p.fallsBack(t, "slideless.pptx", ctPPTX, zipOf(t, parts...), "slide 2 is missing")
}

func pdfAndDocx(t *testing.T, p *previews) {
	// The upload cap (64 MiB per request, the multipart wrapping included) is the PDF limit: a
	// PDF just under it opens in the viewer; the server refuses anything larger, so no larger
	// PDF can be attached.
	p.want(t, "scan.pdf", "application/pdf", minimalPDF("Scan", 64*mib-4*kib), "shown")
	pdfViewer(t, p.tab)
	p.want(t, "invoice.pdf", "application/pdf", minimalPDF("Invoice 42", 0), "shown")
	waitFor(t, p.tab, "the PDF frame", `document.querySelector('.panel iframe.preview-pdf')`)
	pdfViewer(t, p.tab)
	if *screenshots != "" {
		time.Sleep(time.Second) // the viewer draws the page after it loads; only the picture needs it
	}
	shot(t, p.tab, "preview-pdf")
	// DOCX is download only: no Preview button on its message.
	id := p.upload(t, "letter.docx", ctDOCX, zipOf(t, zipPart{name: "word/document.xml", data: []byte("<w:document/>")}))
	p.e.api(t, p.ana, "POST", "/api/channels/"+p.chID+"/messages", map[string]string{"body": "a letter", "upload_id": id}, nil)
	row := `[...document.querySelectorAll('.list .msg')].find(m => m.querySelector('.body')?.textContent === 'a letter')`
	waitFor(t, p.tab, "the letter", row+`?.querySelector('a.file')`)
	if eval[bool](t, p.tab, row+`.querySelector('.preview-open') !== null`) {
		t.Fatal("a DOCX offers a preview")
	}
}

// pdfViewer waits until the preview's frame holds the PDF (its frame's type) and the browser's
// own viewer (Chromium's PDF extension) has opened for it.
func pdfViewer(t *testing.T, tab context.Context) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		var tree page.GetFrameTreeResult
		do(t, tab, "read the frames", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) (err error) {
			tree, err = chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
			return err
		}))
		pdf := false
		for _, f := range tree.FrameTree.ChildFrames {
			pdf = pdf || f.Frame.MimeType == "application/pdf" && strings.Contains(f.Frame.URL, "/api/uploads/")
		}
		viewer := false
		targets, err := chromedp.Targets(tab)
		if err != nil {
			t.Fatalf("list targets: %v", err)
		}
		for _, tg := range targets {
			viewer = viewer || tg.Type == "iframe" && strings.HasPrefix(tg.URL, "chrome-extension://mhjfbmdgcfjbbpaeojofohoefgiehjai/")
		}
		if pdf && viewer {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no PDF viewer in the preview (PDF frame %v, viewer %v)", pdf, viewer)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// noWorkers waits until no Worker is left in the browser: a preview that ran past its time had
// its worker terminated, not just ignored (a worker left busy would stay listed for minutes).
func noWorkers(t *testing.T, tab context.Context) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		targets, err := chromedp.Targets(tab)
		if err != nil {
			t.Fatalf("list targets: %v", err)
		}
		running := ""
		for _, tg := range targets {
			if tg.Type == "worker" {
				running = tg.URL
			}
		}
		if running == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a worker is still running: %s", running)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
