package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/outbound"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/system"
)

// slashCall is what an integration's callback receives (SPEC §Integrations rule 3).
type slashCall struct {
	CommandID string `json:"command_id"`
	Command   string `json:"command"`
	Text      string `json:"text"`
	ChannelID string `json:"channel_id"`
	UserID    string `json:"user_id"`
}

// TestBrowserSlashCommand: a message that starts with a registered slash command goes to the
// slash hook, not into the channel: the integration's callback receives the command and its
// text, and its answer is posted as the integration's bot. The command is in the `/` menu. A
// bot's menu command, or an unknown one, is posted as the message it is.
func TestBrowserSlashCommand(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var calls []slashCall
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var c slashCall
		_ = json.Unmarshal(raw, &c)
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if c.Text == "fail" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if c.Text == "quietly" {
			_, _ = io.WriteString(w, `{"response_type":"ephemeral","text":"Only you see this"}`)
			return
		}
		_, _ = io.WriteString(w, `{"text":"Shipping `+c.Text+` now"}`)
	}))
	t.Cleanup(receiver.Close)
	e := newSystemEnv(t, func(c *system.Config) {
		c.Callbacks = outbound.CallbackConfig{AllowAddr: outbound.PublicOrLoopback, Timeout: 10 * time.Second}
	})
	ana := e.person(t, "Ana Lima")
	ws := e.workspace(t, ana, "Acme")
	wsID := ws.ID
	general := e.channel(t, ana, wsID, "general")
	shipBot, _ := persisttest.Bot(t, e.store, ana.user, wsID, &persisttest.BotOpts{Handle: new("shipit"), Scopes: []string{"bot:write"}})
	var inst struct {
		AppInstallation struct{ ID string } `json:"app_installation"`
	}
	e.api(t, ana, "POST", "/api/workspaces/"+wsID+"/app-installations", map[string]any{"app_slug": "shipit", "bot_user_id": shipBot.ID}, &inst)
	e.api(t, ana, "POST", "/api/workspaces/"+wsID+"/slash-commands", map[string]any{"app_installation_id": inst.AppInstallation.ID,
		"command": "/ship", "description": "Ship a branch", "callback_url": receiver.URL + "/slash"}, nil)

	b := newBrowser(t, e)
	tab := b.tab(t, ana)
	do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
	waitFor(t, tab, "the channel", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
	waitFor(t, tab, "the socket", `document.querySelector('.me .dot.online')`)

	box := "form.composer .compose-box"
	do(t, tab, "type a slash", mouseClick(box), chromedp.SendKeys(box, "/sh"))
	waitFor(t, tab, "the registered command in the menu", menuItems+`.some(l => l.startsWith('/ship'))`)
	do(t, tab, "take it", enter())
	waitFor(t, tab, "the command in the composer", `document.querySelector('`+box+`').value === '/ship '`)
	do(t, tab, "type its text and send", chromedp.SendKeys(box, "main"), enter())
	waitFor(t, tab, "the integration's answer, posted as its bot", hasBody("Shipping main now"))
	mu.Lock()
	got := append([]slashCall(nil), calls...)
	mu.Unlock()
	if len(got) != 1 || got[0].Command != "/ship" || got[0].Text != "main" || got[0].ChannelID != general.ID || got[0].UserID != ana.user.ID {
		t.Fatalf("the callback received %+v, want one /ship main in #general from Ana", got)
	}
	if eval[bool](t, tab, `[...document.querySelectorAll('.list .msg .body')].some(b => b.textContent.startsWith('/ship'))`) {
		t.Fatal("the command was posted as a message as well")
	}
	if author := eval[string](t, tab, `[...document.querySelectorAll('.list .msg')].find(m => m.textContent.includes('Shipping main now'))?.querySelector('.author')?.textContent || ''`); author == "Ana Lima" {
		t.Fatal("the integration's answer is shown as Ana's")
	}

	// An ephemeral answer is shown to the one who asked, and nothing is posted.
	do(t, tab, "send quietly", chromedp.SendKeys(box, "/ship quietly"), enter())
	waitFor(t, tab, "the ephemeral answer", `document.querySelector('.toast:not([hidden])')?.textContent === 'Only you see this'`)

	// A callback that fails: the API's sentence shows and the text goes back to the composer.
	do(t, tab, "send one that fails", chromedp.SendKeys(box, "/ship fail"), enter())
	waitFor(t, tab, "the text back in the composer", `document.querySelector('`+box+`').value === '/ship fail'`)
	// The toast is drawn with the next redraw, which may come after the composer's text.
	waitFor(t, tab, "the API's sentence in place of the earlier answer",
		`(m => m !== '' && m !== 'Only you see this')(document.querySelector('.toast:not([hidden])')?.textContent || '')`)
	eval[bool](t, tab, `(b => (b.value = '', b.dispatchEvent(new Event('input')), true))(document.querySelector('`+box+`'))`)

	// A command no integration registered is a message like any other, for bots to read.
	do(t, tab, "send an unregistered command", chromedp.SendKeys(box, "/standup today"), enter())
	waitFor(t, tab, "posted as a message", hasBody("/standup today"))
	mu.Lock()
	n := len(calls)
	mu.Unlock()
	if n != 3 {
		t.Fatalf("the callback was called %d times, want 3 (the unregistered command is not the integration's)", n)
	}
	if strings.Contains(eval[string](t, tab, `document.querySelector('.list').textContent`), "Only you see this") {
		t.Fatal("an ephemeral answer was posted into the channel")
	}
}
