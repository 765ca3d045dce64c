package web_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/natterchat/natter/persist"
)

// receiver is an HTTP endpoint standing in for an app: it checks each delivery's signature
// against the secret the page showed, answers 200 to the first delivery and 500 after.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	got    []delivered
}

type delivered struct {
	signed bool
	body   string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		m := hmac.New(sha256.New, []byte(r.currentSecret()))
		m.Write([]byte(req.Header.Get("X-Natter-Timestamp") + "." + string(body)))
		signed := hmac.Equal([]byte(req.Header.Get("X-Natter-Signature")), []byte("sha256="+hex.EncodeToString(m.Sum(nil))))
		r.mu.Lock()
		r.got = append(r.got, delivered{signed: signed, body: string(body)})
		n := len(r.got)
		r.mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) currentSecret() string { r.mu.Lock(); defer r.mu.Unlock(); return r.secret }
func (r *receiver) setSecret(s string)    { r.mu.Lock(); r.secret = s; r.mu.Unlock() }

// wait returns the deliveries once there are n of them.
func (r *receiver) wait(t *testing.T, n int) []delivered {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		got := append([]delivered(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the receiver got fewer than %d deliveries", n)
	return nil
}

// integrations: an app is installed, a slash command registered and its secret rotated, and an
// event subscription sends signed deliveries to a receiver; the secrets the page shows are the
// ones the deliveries are signed with, and the attempts show with their outcome. Then each is
// revoked.
func integrations(t *testing.T, e *env, ana person, chID string, recv *receiver, botToken string, tab context.Context) {
	openMenuPanel(t, tab, "Integrations", "Integrations")
	waitFor(t, tab, "the empty lists", `document.querySelector('.panel-body')?.textContent.includes('No apps installed.')`)
	fill(t, tab, "Install an app", "app_slug", "ci-notifier")
	fill(t, tab, "Install an app", "display_name", "CI notifier")
	eval[bool](t, tab, `(s => (s.value = [...s.options].find(o => o.textContent === 'Deploy bot').value, true))(document.querySelector('.panel form[aria-label="Install an app"] select'))`)
	press(t, tab, `.panel form[aria-label="Install an app"]`, "Install")
	// The installation's own bot token, shown once, works.
	waitFor(t, tab, "the installation's token", secretValue+`.startsWith('ccb_')`)
	installToken := eval[string](t, tab, secretValue)
	if status, raw := e.bearer(t, installToken, "GET", "/api/me", nil); status != http.StatusOK {
		t.Fatalf("the installation's token: %d %s", status, raw)
	}
	press(t, tab, ".panel .secret", "Done")
	waitFor(t, tab, "the installation listed", `document.querySelector('.panel .installs li strong')?.textContent === 'CI notifier'`)
	if got := eval[string](t, tab, `document.querySelector('.panel .installs li .hint').textContent`); !strings.Contains(got, "ci-notifier · as Deploy bot") {
		t.Fatalf("the installation reads %q", got)
	}

	// A slash command: its signing secret shown on create, and a new one on rotate.
	form := "Register a slash command"
	fill(t, tab, form, "command", "/deploy")
	fill(t, tab, form, "description", "Deploy a branch")
	// A callback that is not http(s) is refused with the API's sentence; nothing is made and
	// what was typed stays.
	fill(t, tab, form, "callback_url", "ftp://example.com/slash")
	press(t, tab, `.panel form[aria-label="`+form+`"]`, "Register command")
	waitFor(t, tab, "the refusal", `document.querySelector('.panel .error[role=alert]:not([hidden])')?.textContent === 'callback_url must be an absolute http or https URL'`)
	if got := eval[string](t, tab, `document.querySelector('.panel form[aria-label="`+form+`"] [name=command]').value`); got != "/deploy" || eval[bool](t, tab, `!!document.querySelector('.panel .secret')`) {
		t.Fatalf("after the refusal the command field holds %q (or a secret shows)", got)
	}
	fill(t, tab, form, "callback_url", recv.srv.URL+"/slash")
	press(t, tab, `.panel form[aria-label="`+form+`"]`, "Register command")
	waitFor(t, tab, "the command's secret", secretValue+`.startsWith('whsec_')`)
	first := eval[string](t, tab, secretValue)
	press(t, tab, ".panel .secret", "Done")
	waitFor(t, tab, "the command listed", `document.querySelector('.panel .commands li code')?.textContent === '/deploy' && !document.querySelector('.panel .secret')`)
	press(t, tab, ".panel .commands li", "Rotate secret")
	waitFor(t, tab, "a new secret", secretValue+fmt.Sprintf(`.startsWith('whsec_') && %s !== %q`, secretValue, first))
	press(t, tab, ".panel .secret", "Done")

	// An event subscription, signed with the secret the page shows.
	form = "Subscribe to events"
	fill(t, tab, form, "callback_url", recv.srv.URL+"/events")
	press(t, tab, `.panel form[aria-label="`+form+`"]`, "Subscribe")
	waitFor(t, tab, "the subscription's secret", secretValue+`.startsWith('whsec_')`)
	recv.setSecret(eval[string](t, tab, secretValue))
	shot(t, tab, "integrations")
	checkA11y(t, tab, "integrations")
	press(t, tab, ".panel .secret", "Done")
	waitFor(t, tab, "the subscription listed", `document.querySelector('.panel .subs li strong')?.textContent === 'message.created'`)
	e.api(t, ana, "POST", "/api/channels/"+chID+"/messages", map[string]string{"body": "first delivery"}, nil)
	if got := recv.wait(t, 1)[0]; !got.signed || !strings.Contains(got.body, "first delivery") {
		t.Fatalf("the first delivery: signed with the shown secret %v, body %s", got.signed, got.body)
	}
	press(t, tab, ".panel .subs li", "Rotate secret")
	waitFor(t, tab, "the rotated secret", secretValue+fmt.Sprintf(`.startsWith('whsec_') && %s !== %q`, secretValue, recv.currentSecret()))
	recv.setSecret(eval[string](t, tab, secretValue))
	press(t, tab, ".panel .secret", "Done")
	e.api(t, ana, "POST", "/api/channels/"+chID+"/messages", map[string]string{"body": "second delivery"}, nil)
	if got := recv.wait(t, 2)[1]; !got.signed || !strings.Contains(got.body, "second delivery") {
		t.Fatalf("the delivery after rotation: signed with the new secret %v, body %s", got.signed, got.body)
	}
	// The attempts, newest first: the receiver failed the second and took the first.
	subID := eval[string](t, tab, `document.querySelector('.panel .subs li').dataset.id`)
	e.waitAttempts(t, ana, subID, 2)
	press(t, tab, ".panel .subs li", "Deliveries")
	rows := `[...document.querySelectorAll('.panel .deliveries tr.delivery')].map(r => [...r.cells].slice(1).map(c => c.textContent).join(' / ')).join('|')`
	waitFor(t, tab, "two attempts", rows+` === 'message.created / 1 / 500 receiver failed|message.created / 1 / 200 delivered'`)
	if eval[string](t, tab, `document.querySelector('.panel .deliveries tr.delivery time').dateTime`) == "" {
		t.Fatal("an attempt shows no time")
	}
	eval[bool](t, tab, `(b => (b.scrollTop = document.querySelector('.panel .subs').offsetTop - b.offsetTop - 40, true))(document.querySelector('.panel-body'))`)
	shot(t, tab, "deliveries")
	checkA11y(t, tab, "deliveries")
	// Attempts come a page at a time (the API's default, 50), newest first; the rest on demand.
	for i := 3; i <= 51; i++ {
		e.api(t, ana, "POST", "/api/channels/"+chID+"/messages", map[string]string{"body": fmt.Sprintf("delivery %d", i)}, nil)
	}
	recv.wait(t, 51)
	e.waitAttempts(t, ana, subID, 51)
	count := `document.querySelectorAll('.panel .deliveries tr.delivery').length`
	press(t, tab, ".panel .subs li", "Refresh")
	waitFor(t, tab, "the newest 50 attempts", count+` === 50`)
	press(t, tab, ".panel .subs li", "Older attempts")
	waitFor(t, tab, "all 51", count+` === 51 && document.querySelector('.panel .deliveries tr.delivery:last-child .delivery-outcome').textContent === '200 delivered'`)
	if eval[bool](t, tab, `[...document.querySelectorAll('.panel .subs li button')].some(b => b.textContent === 'Older attempts')`) {
		t.Fatal("Older attempts is still offered after the last page")
	}

	// Revoked, each goes from its list; the installation last, with its bot's tokens, saying
	// what it ended: its command and subscription were already gone, and the bot had two live
	// tokens (the installation's, and the one claimed with the setup code).
	for _, c := range []struct{ scope, empty string }{
		{".panel .subs li", "No event subscriptions."}, {".panel .commands li", "No slash commands."}, {".panel .installs li", "No apps installed."}} {
		if c.scope == ".panel .installs li" {
			eval[bool](t, tab, `document.querySelector('.panel .installs li input[name=revoke_bot_tokens]').click() ?? true`)
		}
		press(t, tab, c.scope, "Revoke")
		press(t, tab, c.scope, "Revoke?")
		waitFor(t, tab, c.empty, fmt.Sprintf(`document.querySelector('.panel-body').textContent.includes(%q)`, c.empty))
	}
	// The list may empty first on the live event, before the API's answer is drawn.
	waitFor(t, tab, "the installation's revocation saying what it ended",
		`document.querySelector('.panel [role=status]')?.textContent === "Revoked CI notifier: 0 slash commands, 0 event subscriptions, 2 bot tokens."`)
	for _, token := range []string{installToken, botToken} {
		if status, raw := e.bearer(t, token, "GET", "/api/me", nil); status != http.StatusUnauthorized {
			t.Fatalf("a token of the bot after its installation was revoked with its tokens: %d %s, want 401", status, raw)
		}
	}
	var list struct {
		SlashCommands []persist.SlashCommand `json:"slash_commands"`
	}
	e.api(t, ana, "GET", "/api/workspaces/"+eval[string](t, tab, `localStorage.getItem('natter.workspace')`)+"/slash-commands", nil, &list)
	if len(list.SlashCommands) != 0 {
		t.Fatalf("revoked commands still listed: %+v", list.SlashCommands)
	}
}

// waitAttempts waits until the API lists n delivery attempts of the subscription: an attempt is
// stored once its receiver has answered, a moment after the receiver saw it.
func (e *env) waitAttempts(t *testing.T, p person, subID string, n int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		var page struct {
			Deliveries []persist.EventDeliveryAttempt `json:"deliveries"`
		}
		e.api(t, p, "GET", "/api/event-subscriptions/"+subID+"/deliveries?limit=200", nil, &page)
		if len(page.Deliveries) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API lists %d attempts, want %d", len(page.Deliveries), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
