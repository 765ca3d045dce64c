package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server/passwordhash"
)

// settingsRun is the person's own settings, driven in the tab signed in as Ana.
type settingsRun struct {
	e        *env
	tab      context.Context
	ana, ben person
	hasher   *passwordhash.Hasher
}

// me is GET /api/me as Ana's token reads it.
type meView struct {
	DisplayName          string `json:"display_name"`
	Handle               string `json:"handle"`
	AvatarURL            string `json:"avatar_url"`
	PasswordEnrolled     bool   `json:"password_enrolled"`
	NotificationSettings struct {
		PushoverEnabled bool   `json:"pushover_enabled"`
		PushoverUserKey string `json:"pushover_user_key"`
	} `json:"notification_settings"`
}

func (s settingsRun) me(t *testing.T) meView {
	t.Helper()
	var out struct{ User meView }
	s.e.api(t, s.ana, "GET", "/api/me", nil, &out)
	return out.User
}

// status is the HTTP status the API answers GET path with for a raw session token.
func (s settingsRun) status(t *testing.T, token, path string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", s.e.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	res.Body.Close()
	return res.StatusCode
}

// fillSel sets a form field as typing would.
func fillSel(t *testing.T, tab context.Context, sel, value string) {
	t.Helper()
	eval[bool](t, tab, fmt.Sprintf(`(el => (el.value = %q, el.dispatchEvent(new Event('input')), el.dispatchEvent(new Event('change')), true))(document.querySelector(%q))`, value, sel))
}

func (s settingsRun) profile(t *testing.T) {
	tab := s.tab
	openMenuItem(t, tab, "Profile and account")
	form := `form[aria-label=Profile] `
	waitFor(t, tab, "the profile form", `document.querySelector('`+form+`input[name=display_name]')?.value === 'Ana Lima'`)
	// Ana has no password: the panel says so instead of offering a form.
	waitFor(t, tab, "no password form", `!document.querySelector('form[aria-label=Password]') && document.querySelector('.profile').textContent.includes('signs in without a password')`)
	fillSel(t, tab, form+"input[name=display_name]", "Ana Maria Lima")
	fillSel(t, tab, form+"input[name=handle]", "@Ana_Lima")
	click(t, tab, "save", form+"button[type=submit]")
	waitFor(t, tab, "saved", `document.querySelector('`+form+`p[role=status]').textContent === 'Saved.'`)
	// SPEC §User: a handle is accepted with a leading @, lowercased and stored without it.
	if me := s.me(t); me.DisplayName != "Ana Maria Lima" || me.Handle != "ana_lima" {
		t.Fatalf("the server has %q @%q", me.DisplayName, me.Handle)
	}
	waitFor(t, tab, "the sidebar's new name", `document.querySelector('.me .me-name')?.textContent === 'Ana Maria Lima'`)
	waitFor(t, tab, "the handle as kept", `document.querySelector('`+form+`input[name=handle]').value === 'ana_lima'`)
	shot(t, tab, "profile")
	checkA11y(t, tab, "profile")
	// SPEC §Limits: a handle is 2-32 characters. The API's sentence shows; nothing changes.
	fillSel(t, tab, form+"input[name=handle]", "a")
	click(t, tab, "save a one-letter handle", form+"button[type=submit]")
	waitFor(t, tab, "the refusal", `document.querySelector('`+form+`p.error')?.textContent.length > 0`)
	if me := s.me(t); me.Handle != "ana_lima" {
		t.Fatalf("a refused handle changed it to %q", me.Handle)
	}
	// SPEC §User: a handle is unique; Ben's is refused to Ana, whatever its case.
	s.e.api(t, s.ben, "PATCH", "/api/me", map[string]string{"handle": "okafor"}, nil)
	eval[bool](t, tab, `document.querySelector('`+form+`p[role=status]').textContent = '', true`)
	fillSel(t, tab, form+"input[name=handle]", "@Okafor")
	click(t, tab, "save Ben's handle", form+"button[type=submit]")
	waitFor(t, tab, "the refusal", `document.querySelector('`+form+`p.error')?.textContent.length > 0`)
	if me := s.me(t); me.Handle != "ana_lima" {
		t.Fatalf("a taken handle changed Ana's to %q", me.Handle)
	}
}

// tinyPNG is a 4×4 picture for the avatar upload.
func tinyPNG(t *testing.T) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for i := range img.Pix {
		img.Pix[i] = 0x80
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "me.png")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (s settingsRun) avatar(t *testing.T) {
	tab := s.tab
	form := `form[aria-label=Profile] `
	openMenuItem(t, tab, "Profile and account")
	// SPEC §User: avatar_url is blank or an http/https URL; anything else is refused with the
	// API's sentence and changes nothing.
	fillSel(t, tab, form+"input[name=avatar_url]", "javascript:alert(1)")
	click(t, tab, "save a script URL", form+"button[type=submit]")
	waitFor(t, tab, "the refusal", `document.querySelector('`+form+`p.error')?.textContent.length > 0`)
	if me := s.me(t); strings.HasPrefix(me.AvatarURL, "javascript") {
		t.Fatalf("avatar_url is %q", me.AvatarURL)
	}
	// A picture that cannot load falls back to the initial.
	broken := "http://127.0.0.1:1/missing.png"
	fillSel(t, tab, form+"input[name=avatar_url]", broken)
	click(t, tab, "save", form+"button[type=submit]")
	waitFor(t, tab, "saved", `document.querySelector('`+form+`p[role=status]').textContent === 'Saved.'`)
	if me := s.me(t); me.AvatarURL != broken {
		t.Fatalf("avatar_url is %q", me.AvatarURL)
	}
	waitFor(t, tab, "the initial instead", `document.querySelector('.me .me-avatar span.avatar')?.textContent === 'A' && !document.querySelector('.me .me-avatar img')`)
	// An uploaded picture becomes the avatar, at its address on this server.
	do(t, tab, "upload a picture", chromedp.SetUploadFiles(form+`input[type=file]`, []string{tinyPNG(t)}))
	waitFor(t, tab, "the upload's address", `document.querySelector('`+form+`input[name=avatar_url]').value.startsWith('`+s.e.URL+`/api/uploads/')`)
	click(t, tab, "save", form+"button[type=submit]")
	waitFor(t, tab, "the picture shown", `(img => img && img.complete && img.naturalWidth === 4)(document.querySelector('.me .me-avatar img.avatar'))`)
	if me := s.me(t); !strings.HasPrefix(me.AvatarURL, s.e.URL+"/api/uploads/") {
		t.Fatalf("avatar_url is %q", me.AvatarURL)
	}
}

func (s settingsRun) sessions(t *testing.T) {
	tab := s.tab
	laptop, phone := persisttest.Session(t, s.e.store, s.ana.user.ID), persisttest.Session(t, s.e.store, s.ana.user.ID)
	openMenuItem(t, tab, "Profile and account")
	waitFor(t, tab, "three sessions", `document.querySelectorAll('.sessions li').length === 3`)
	if n := eval[int](t, tab, `[...document.querySelectorAll('.sessions li')].filter(li => li.textContent.includes('this browser')).length`); n != 1 {
		t.Fatalf("%d sessions are marked as this browser", n)
	}
	eval[bool](t, tab, `[...document.querySelectorAll('.profile button')].find(b => b.textContent === 'Sign out everywhere else').click() ?? true`)
	waitFor(t, tab, "signed out elsewhere", `document.querySelector('section[aria-label=Sessions] [role=status]')?.textContent === 'Signed out of 2 other sessions.' && document.querySelectorAll('.sessions li').length === 1`)
	for _, token := range []string{laptop, phone} {
		if got := s.status(t, token, "/api/me"); got != http.StatusUnauthorized {
			t.Fatalf("a session signed out elsewhere answers %d", got)
		}
	}
	if got := s.status(t, s.ana.token, "/api/me"); got != http.StatusOK {
		t.Fatalf("this browser's session answers %d", got)
	}
}

func (s settingsRun) password(t *testing.T) {
	tab := s.tab
	ctx := context.Background()
	hash, err := s.hasher.Hash(ctx, "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := persist.WithTxV(ctx, s.e.store, func(tx *persist.Tx) (persist.User, error) { return tx.PasswordSet(ctx, s.ana.user.Email, hash) }); err != nil {
		t.Fatalf("enrol: %v", err)
	}
	other := persisttest.Session(t, s.e.store, s.ana.user.ID)
	reloaded(t, tab, `document.querySelector('.me .dot.online')`)
	openMenuItem(t, tab, "Profile and account")
	form := `form[aria-label=Password] `
	waitFor(t, tab, "the password form", `document.querySelector('`+form+`input[name=current_password]')`)
	change := func(current, next, again string) {
		fillSel(t, tab, form+"input[name=current_password]", current)
		fillSel(t, tab, form+"input[name=new_password]", next)
		fillSel(t, tab, form+"input[name=confirm_password]", again)
		eval[bool](t, tab, `document.querySelector('`+form+`p[role=status]').textContent = '', true`)
		click(t, tab, "change the password", form+"button[type=submit]")
	}
	refused := func(what string) {
		t.Helper()
		waitFor(t, tab, what, `document.querySelector('`+form+`p.error')?.textContent.length > 0`)
		if got := s.status(t, other, "/api/me"); got != http.StatusOK {
			t.Fatalf("%s: the other session answers %d", what, got)
		}
	}
	change("wrong horse", "battery staple", "battery staple")
	refused("a wrong current password refused")
	change("correct horse", "battery staple", "battery stapler")
	refused("two different new passwords refused")
	// SPEC §Passwords: 8-256 code points.
	change("correct horse", "seven77", "seven77")
	refused("a seven-character password refused")
	change("correct horse", "battery staple", "battery staple")
	waitFor(t, tab, "changed", `document.querySelector('`+form+`p[role=status]').textContent === 'Password changed. Your other sessions were signed out.'`)
	if got := s.status(t, other, "/api/me"); got != http.StatusUnauthorized {
		t.Fatalf("after the change the other session answers %d", got)
	}
	if got := s.status(t, s.ana.token, "/api/me"); got != http.StatusOK {
		t.Fatalf("after the change this browser's session answers %d", got)
	}
}

func (s settingsRun) pushover(t *testing.T) {
	tab := s.tab
	openMenuItem(t, tab, "Notifications")
	form := `form[aria-label=Pushover] `
	waitFor(t, tab, "the Pushover form", `document.querySelector('`+form+`input[name=pushover_user_key]')`)
	eval[bool](t, tab, `document.querySelector('`+form+`input[name=pushover_enabled]').checked = true`)
	// SPEC §User: the user key is 30 characters.
	fillSel(t, tab, form+"input[name=pushover_user_key]", "tooshort")
	click(t, tab, "save", form+"button[type=submit]")
	waitFor(t, tab, "the refusal", `document.querySelector('`+form+`p.error')?.textContent.length > 0`)
	if me := s.me(t); me.NotificationSettings.PushoverEnabled || me.NotificationSettings.PushoverUserKey != "" {
		t.Fatalf("a refused key changed the settings: %+v", me.NotificationSettings)
	}
	key := "u" + strings.Repeat("a1", 14) + "z"
	fillSel(t, tab, form+"input[name=pushover_user_key]", key)
	click(t, tab, "save", form+"button[type=submit]")
	waitFor(t, tab, "saved", `document.querySelector('`+form+`p[role=status]').textContent === 'Saved.'`)
	if me := s.me(t); !me.NotificationSettings.PushoverEnabled || me.NotificationSettings.PushoverUserKey != key {
		t.Fatalf("the settings are %+v", me.NotificationSettings)
	}
}

// contrast lists the text on the page whose contrast with its background is under 4.5:1
// (WCAG AA, CLIENT.md), with the page background's luminance.
const contrast = `(() => {
  const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }; return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const bgOf = (el) => { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor); if (c.length === 3 || c[3] > 0) return c; } return [255, 255, 255]; };
  const low = [];
  const sels = ['body', '.me-name', '.place', '.group-head', '.conv-header h1', '.msg .body', '.msg .author', '.muted', '#panel-title', '.notify-state',
    '.field span', '.btn', '.menu-item', '.sessions li', '.devices li', '.levels label', '.check', '.error'];
  let seen = 0;
  for (const sel of sels) for (const el of document.querySelectorAll(sel)) {
    if (!el.textContent.trim() || !el.getClientRects().length) continue;
    seen++;
    const a = lum(rgb(getComputedStyle(el).color)), b = lum(bgOf(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) low.push(sel + ': ' + ratio.toFixed(2));
  }
  return JSON.stringify({ background: lum(bgOf(document.body)), seen, low: [...new Set(low)] });
})()`

func (s settingsRun) themes(t *testing.T) {
	tab := s.tab
	openMenuItem(t, tab, "Profile and account")
	waitFor(t, tab, "the sessions", `document.querySelectorAll('.sessions li').length > 0`)
	for _, scheme := range []string{"dark", "light"} {
		if _, err := chromedp.Call(tab, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
			t.Fatalf("emulate %s: %v", scheme, err)
		}
		var got struct {
			Background float64
			Seen       int
			Low        []string
		}
		if err := json.Unmarshal([]byte(eval[string](t, tab, contrast)), &got); err != nil {
			t.Fatal(err)
		}
		if dark := got.Background < 0.1; dark != (scheme == "dark") {
			t.Fatalf("with the system set to %s the page's background has luminance %.2f", scheme, got.Background)
		}
		if got.Seen < 20 || len(got.Low) > 0 {
			t.Fatalf("%s theme: %d texts checked, under 4.5:1: %v", scheme, got.Seen, got.Low)
		}
		if scheme == "dark" {
			shot(t, tab, "settings-dark")
		}
	}
}
