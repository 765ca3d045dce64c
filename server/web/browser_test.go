package web_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/natterchat/natter/persist"
)

// TestBrowser drives the client in headless Chromium against a real server: two people in two
// browser contexts. The subtests share one browser and one server to stay within CI's two
// cores, so they run in order and build on each other's messages.
func TestBrowser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ana := e.person(t, "Ana Lima")
	ben := e.person(t, "Ben Okafor")
	ws := e.workspace(t, ana, "Acme")
	wsID := ws.ID
	e.addMember(t, wsID, ben.user.ID)
	general := e.channel(t, ana, wsID, "general")
	e.channel(t, ana, wsID, "design")
	chID := general.ID

	b := newBrowser(t, e)
	aTab := b.tab(t, ana)
	bTab := b.tab(t, ben)
	// Any dialog (alert, confirm) opening on either page is a failure the XSS check reports.
	var dialogs atomic.Int32
	for _, tab := range []context.Context{aTab, bTab} {
		watchDialogs(t, tab, &dialogs)
	}
	for _, tab := range []context.Context{aTab, bTab} {
		do(t, tab, "open the client", chromedp.Navigate(e.URL+"/"))
		waitFor(t, tab, "the channel to open", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
		waitFor(t, tab, "the socket to connect", `document.querySelector('.me .dot.online')`)
	}

	t.Run("TwoPeopleTalkLive", func(t *testing.T) {
		send(t, aTab, "form.composer .compose-box", "Hello Ben, the **launch** is on Friday")
		waitFor(t, bTab, "Ana's message on Ben's page", hasBody("Hello Ben, the launch is on Friday"))
		// Typing shows on the other page before the message is sent.
		do(t, bTab, "start typing", mouseClick("form.composer .compose-box"), chromedp.SendKeys("form.composer .compose-box", "Great, "))
		waitFor(t, aTab, "Ben typing on Ana's page", `document.querySelector('.typing').textContent === 'Ben Okafor is typing…'`)
		do(t, bTab, "finish typing", chromedp.SendKeys("form.composer .compose-box", "I will prepare the notes"), enter())
		waitFor(t, aTab, "Ben's answer on Ana's page", hasBody("Great, I will prepare the notes"))
		requireCount(t, aTab, "Hello Ben, the launch is on Friday", 1)
		requireCount(t, bTab, "Hello Ben, the launch is on Friday", 1)
		requireCount(t, aTab, "Great, I will prepare the notes", 1)
		waitFor(t, aTab, "nothing left pending", `!document.querySelector('.list .msg.pending')`)
		shot(t, aTab, "channel-light")
	})

	t.Run("TypingPerPlace", func(t *testing.T) {
		// Typing in one place and then, within 3 seconds, in another shows in the second.
		eval[bool](t, aTab, sidebarChannel("design")+`.click() ?? true`)
		waitFor(t, aTab, "Ana in design", `document.querySelector('.conv-header h1')?.textContent === 'design'`)
		eval[bool](t, bTab, `(() => { const b = document.querySelector('form.composer .compose-box'); b.focus();
			b.value = 'x'; b.dispatchEvent(new Event('input', { bubbles: true })); b.value = '';
			b.dispatchEvent(new Event('input', { bubbles: true })); `+sidebarChannel("design")+`.click(); return true; })()`)
		waitFor(t, bTab, "Ben in design", `document.querySelector('.conv-header h1')?.textContent === 'design'`)
		do(t, bTab, "type in design", chromedp.SendKeys("form.composer .compose-box", "d"))
		waitFor(t, aTab, "Ben typing in design on Ana's page", `document.querySelector('.typing')?.textContent === 'Ben Okafor is typing…'`)
		eval[bool](t, bTab, `(() => { const b = document.querySelector('form.composer .compose-box'); b.value = '';
			b.dispatchEvent(new Event('input', { bubbles: true })); return true; })()`)
		for _, tab := range []context.Context{aTab, bTab} {
			eval[bool](t, tab, sidebarChannel("general")+`.click() ?? true`)
			waitFor(t, tab, "back in general", `document.querySelector('.conv-header h1')?.textContent === 'general'`)
		}
	})

	t.Run("ThreadReply", func(t *testing.T) {
		clickAction(t, bTab, "Hello Ben, the launch is on Friday", "Reply in thread")
		waitFor(t, bTab, "the thread panel", `document.querySelector('.panel:not([hidden]) .thread')`)
		send(t, bTab, ".thread-composer .compose-box", "Agenda attached in the doc")
		waitFor(t, aTab, "the reply count on Ana's page", `[...document.querySelectorAll('.list .thread-summary')].some(b => b.textContent.startsWith('1 reply'))`)
		do(t, aTab, "open the thread", mouseClick(".list .thread-summary"))
		waitFor(t, aTab, "the reply in Ana's thread panel", `[...document.querySelectorAll('.thread-list .body')].some(b => b.textContent === 'Agenda attached in the doc')`)
		shot(t, aTab, "thread")
		do(t, aTab, "close the panel", mouseClick(`.panel-head button[aria-label="Close panel"]`))
	})

	t.Run("ReactionSeenByTheOther", func(t *testing.T) {
		clickAction(t, bTab, "Hello Ben, the launch is on Friday", "Add reaction")
		do(t, bTab, "pick an emoji", mouseClick(`.emoji-picker .emoji-btn[data-c="🎉"]`))
		chip := fmt.Sprintf(`[...document.querySelectorAll('.list .msg')].find(m => m.querySelector('.body')?.textContent === %q)?.querySelector('.chip')`, "Hello Ben, the launch is on Friday")
		waitFor(t, aTab, "the reaction on Ana's page", chip+`?.textContent === '🎉1'`)
		if got := eval[string](t, aTab, chip+`.getAttribute('aria-pressed')`); got != "false" {
			t.Fatalf("Ana did not react, but her chip is pressed=%s", got)
		}
		waitFor(t, bTab, "Ben's own reaction highlighted", chip+`?.getAttribute('aria-pressed') === 'true'`)
	})

	t.Run("UploadShowsImage", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "chart.png")
		writePNG(t, file)
		do(t, aTab, "choose a file", chromedp.SetUploadFiles(`form.composer input[type=file]`, []string{file}))
		for name, tab := range map[string]context.Context{"Ana": aTab, "Ben": bTab} {
			waitFor(t, tab, "the image on "+name+"'s page", `[...document.querySelectorAll('.list img.inline-image')].some(i => i.complete && i.naturalWidth === 160)`)
		}
		shot(t, bTab, "upload")
	})

	t.Run("DropAndPasteFiles", func(t *testing.T) { dropAndPaste(t, aTab, bTab) })

	t.Run("MarkdownIsSafe", func(t *testing.T) { markdownIsSafe(t, aTab) })

	t.Run("MarkupShownAsText", func(t *testing.T) {
		hostile := `<img src=x onerror=alert(1)>`
		send(t, aTab, "form.composer .compose-box", hostile)
		for _, tab := range []context.Context{aTab, bTab} {
			waitFor(t, tab, "the hostile body as text", hasBody(hostile))
			if n := eval[int](t, tab, `document.querySelectorAll('.list .body img').length`); n != 0 {
				t.Fatalf("a message body produced %d img elements", n)
			}
		}
		// A dialog would have blocked the page's scripts, so the checks above had to pass first.
		if n := dialogs.Load(); n != 0 {
			t.Fatalf("%d dialogs opened", n)
		}
	})

	t.Run("SendRetriedAfterLostAnswer", func(t *testing.T) { lostAnswer(t, e, ana, chID, aTab, bTab) })

	t.Run("ResumesAfterServerRestart", func(t *testing.T) {
		e.api(t, ana, "POST", "/api/channels/"+chID+"/messages", map[string]string{"body": "before the restart"}, nil)
		waitFor(t, bTab, "the message before the restart", hasBody("before the restart"))
		e.restart(t, func() {
			waitFor(t, bTab, "the reconnecting banner", `document.querySelector('.banner:not([hidden])')?.textContent === 'Reconnecting…'`)
			shot(t, bTab, "reconnecting")
			for i := 1; i <= 3; i++ {
				e.post(t, ana, chID, fmt.Sprintf("while down %d", i))
			}
		})
		e.api(t, ana, "POST", "/api/channels/"+chID+"/messages", map[string]string{"body": "after the restart"}, nil)
		waitFor(t, bTab, "the message after the restart", hasBody("after the restart"))
		waitFor(t, bTab, "the banner gone", `document.querySelector('.banner').hidden`)
		got := eval[[]string](t, bTab, `[...document.querySelectorAll('.list .msg .body')].map(b => b.textContent)`)
		want := []string{"before the restart", "while down 1", "while down 2", "while down 3", "after the restart"}
		start := -1
		for i, s := range got {
			if s == want[0] {
				start = i
			}
		}
		if start < 0 || len(got)-start != len(want) || strings.Join(got[start:], "|") != strings.Join(want, "|") {
			t.Fatalf("messages after the restart = %q, want %q at the end, once each", got, want)
		}
	})

	t.Run("SearchHighlightsAndJumps", func(t *testing.T) {
		do(t, aTab, "search", chromedp.SendKeys(".conv-header .search", "launch"), enter())
		waitFor(t, aTab, "a highlighted result", `document.querySelector('.results mark')?.textContent.toLowerCase() === 'launch'`)
		shot(t, aTab, "search")
		do(t, aTab, "jump to the result", mouseClick(".results .result"))
		waitFor(t, aTab, "the message highlighted", `document.querySelector('.list .msg.highlight .body')?.textContent === 'Hello Ben, the launch is on Friday'`)
	})

	t.Run("EditAndDeleteOwn", func(t *testing.T) { editAndDelete(t, aTab, bTab) })
	t.Run("PinsPanel", func(t *testing.T) { pins(t, aTab, bTab) })
	t.Run("UnreadCounts", func(t *testing.T) { unread(t, e, ana, wsID, bTab) })
	t.Run("DirectMessages", func(t *testing.T) { directMessages(t, aTab, bTab) })
	t.Run("ResyncWhenTheLogMovedOn", func(t *testing.T) { resync(t, e, ana, wsID, chID, bTab) })
	t.Run("MagicLinkSignInAndOut", func(t *testing.T) { magicLink(t, e, b, wsID) })
	t.Run("RevokedSessionBackToSignIn", func(t *testing.T) {
		e.api(t, ben, "POST", "/api/auth/logout", nil, nil)
		waitFor(t, bTab, "the sign-in view", `document.querySelector('.signin-card')`)
	})

	t.Run("DarkTheme", func(t *testing.T) {
		do(t, aTab, "prefer dark", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
			return err
		}))
		bg := eval[string](t, aTab, `getComputedStyle(document.body).backgroundColor`)
		if bg != "rgb(23, 25, 30)" {
			t.Fatalf("dark background = %s", bg)
		}
		do(t, aTab, "open the people panel", mouseClick(".conv-header .members-count"))
		waitFor(t, aTab, "the member directory", `[...document.querySelectorAll('.people li')].some(li => li.textContent.includes('Ben Okafor'))`)
		shot(t, aTab, "channel-dark")
	})
}

func (e *env) addMember(t testing.TB, wsID, userID string) {
	t.Helper()
	ctx := context.Background()
	if _, err := persist.WithTxV(ctx, e.store, func(tx *persist.Tx) (persist.Member, error) {
		return tx.MemberAdd(ctx, wsID, userID, "member")
	}); err != nil {
		t.Fatalf("add member: %v", err)
	}
}

// post writes a message straight to the database, for when the API is down.
func (e *env) post(t testing.TB, p person, channelID, body string) {
	t.Helper()
	ctx := context.Background()
	if _, err := persist.WithTxV(ctx, e.store, func(tx *persist.Tx) (persist.MessageCreated, error) {
		return tx.MessageCreate(ctx, persist.ActorFor(p.user), persist.Place{ChannelID: channelID}, persist.MessageCreateParams{Body: body})
	}); err != nil {
		t.Fatalf("post %q: %v", body, err)
	}
}

func hasBody(text string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('.list .msg:not(.pending) .body')].some(b => b.textContent === %q)`, text)
}

func requireCount(t *testing.T, ctx context.Context, text string, want int) {
	t.Helper()
	n := eval[int](t, ctx, fmt.Sprintf(`[...document.querySelectorAll('.list .msg .body')].filter(b => b.textContent === %q).length`, text))
	if n != want {
		t.Fatalf("%q is shown %d times, want %d", text, n, want)
	}
}

// enter presses Enter as a keyboard does, without the extra character event SendKeys adds.
func enter() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
			if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: typ, Key: "Enter", Code: "Enter",
				WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13}); err != nil {
				return err
			}
		}
		return nil
	})
}

// send types text into a composer and presses Enter.
func send(t *testing.T, ctx context.Context, box, text string) {
	t.Helper()
	do(t, ctx, "focus "+box, mouseClick(box))
	do(t, ctx, "type "+text, chromedp.SendKeys(box, text))
	do(t, ctx, "press Enter", enter())
}

// clickAction presses one of the hover actions of the message whose body is text.
func clickAction(t *testing.T, ctx context.Context, text, label string) {
	t.Helper()
	sel := fmt.Sprintf(`[...document.querySelectorAll('.list .msg')].find(m => m.querySelector('.body')?.textContent === %q)?.querySelector('.actions [aria-label=%q]')`, text, label)
	// Found and pressed in one step, so a redraw in between cannot lose the press.
	waitFor(t, ctx, "the "+label+" action, pressed", `(b => b && (b.click(), true))(`+sel+`)`)
}

func watchDialogs(t *testing.T, ctx context.Context, n *atomic.Int32) {
	t.Helper()
	opened := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range opened {
			if err != nil {
				return
			}
			n.Add(1)
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
}

func writePNG(t *testing.T, path string) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 160, 100))
	for y := 0; y < 100; y++ {
		for x := 0; x < 160; x++ {
			img.Set(x, y, color.RGBA{uint8(80 + x/2), uint8(70 + y), 229, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
