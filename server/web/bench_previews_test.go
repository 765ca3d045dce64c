package web_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/persist"
)

// BenchmarkPreviews measures how far inside their time limits (2 s for highlighting, 5 s for
// Markdown and an Office file) the previews' workers finish on the largest legitimate inputs, in headless
// Chromium against a real server on loopback (docs/performance.md). Each figure is the median
// of 5 runs of a fresh worker (start included), beside the same worker on a tiny input.
// Run it once: go test ./server/web -run '^$' -bench Previews -benchtime 1x
func BenchmarkPreviews(b *testing.B) {
	e := newEnv(b)
	ana := e.person(b, "Ana Lima")
	var ws struct{ Workspace persist.Workspace }
	e.api(b, ana, "POST", "/api/workspaces", map[string]string{"name": "Bench"}, &ws)
	var ch struct{ Channel persist.Channel }
	e.api(b, ana, "POST", "/api/workspaces/"+ws.Workspace.ID+"/channels", map[string]string{"name": "files"}, &ch)
	p := &previews{e: e, ana: ana, wsID: ws.Workspace.ID}
	small := p.upload(b, "sales.xlsx", ctXLSX, xlsx(b, salesSheet))
	big := p.upload(b, "bomb.xlsx", ctXLSX, expandingXLSX(b, expandedLimit))
	br := newBrowser(b, e)
	tab := br.tab(b, ana)
	do(b, tab, "open the client", chromedp.Navigate(e.URL+"/"))
	waitFor(b, tab, "the page", `document.querySelector('.me')`)

	// median runs a fresh worker five times through runWorker, its message and transfer list
	// made by input (an async JS function), and returns the median duration in milliseconds.
	median := func(worker, input string, limitMs int) float64 {
		return eval[float64](b, tab, fmt.Sprintf(`(async () => {
			const m = await import('/assets/js/lazy/preview.js');
			const times = [];
			for (let i = 0; i < 5; i++) {
				const [msg, transfer] = await (%s)();
				const t0 = performance.now();
				const res = await m.runWorker(%q, msg, %d, transfer);
				if (res.error) throw new Error(res.error);
				times.push(performance.now() - t0);
			}
			return times.sort((a, b) => a - b)[2];
		})()`, input, worker, limitMs))
	}
	code := fmt.Sprintf(`async () => [{ text: new TextDecoder().decode(Uint8Array.from(atob(%q), c => c.charCodeAt(0))), lang: 'go', cap: %d }, []]`,
		base64.StdEncoding.EncodeToString(goSource(highlightLimit)), 2*mib)
	tiny := `async () => [{ text: 'package main', lang: 'go', cap: 2097152 }, []]`
	prose := "The **quick** brown fox jumps over the lazy dog, " + strings.Repeat("and over the lazy dog again, ", 60) + "\n\n"
	book := fmt.Sprintf(`async () => [{ text: %q.repeat(%d).slice(0, %d) }, []]`, prose, textLimit/len(prose)+1, textLimit)
	office := func(id string) string {
		return fmt.Sprintf(`async () => { const buf = await (await fetch('/api/uploads/%s')).arrayBuffer(); return [{ kind: 'xlsx', bytes: buf, expanded: %d }, [buf]]; }`, id, expandedLimit)
	}
	for b.Loop() {
		b.ReportMetric(median("./highlight-worker.js", tiny, 60000), "ms-highlight-tiny")
		b.ReportMetric(median("./highlight-worker.js", code, 60000), "ms-highlight-256KiB-go")
		b.ReportMetric(median("./markdown-worker.js", `async () => [{ text: '**hello**' }, []]`, 60000), "ms-markdown-tiny")
		b.ReportMetric(median("./markdown-worker.js", book, 60000), "ms-markdown-2MiB")
		b.ReportMetric(median("./ooxml-worker.js", office(small), 60000), "ms-xlsx-small")
		b.ReportMetric(median("./ooxml-worker.js", office(big), 60000), "ms-xlsx-12MiB-expanded")
	}
}
