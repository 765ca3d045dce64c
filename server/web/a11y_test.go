package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// axeVersion is the axe-core release the accessibility check runs. It is not committed: it is
// installed from the npm registry outside the repository (see axeScript).
const axeVersion = "4.11.0"

var (
	axeOnce   sync.Once
	axeSource string
	axeErr    error
)

// axeScript returns axe-core's browser build: the file named by NATTER_AXE, else the one in
// $HOME/.cache/natter-axe (installing axeVersion there with npm when it is missing or another
// version). An error says why when neither npm nor the file is at hand.
func axeScript() (string, error) {
	axeOnce.Do(func() {
		path := os.Getenv("NATTER_AXE")
		if path == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				axeErr = fmt.Errorf("no home directory for the axe-core cache: %w", err)
				return
			}
			prefix := filepath.Join(home, ".cache", "natter-axe")
			path = filepath.Join(prefix, "node_modules", "axe-core", "axe.min.js")
			var pkg struct{ Version string }
			raw, _ := os.ReadFile(filepath.Join(prefix, "node_modules", "axe-core", "package.json"))
			_ = json.Unmarshal(raw, &pkg)
			if _, err := os.Stat(path); err != nil || pkg.Version != axeVersion {
				npm, err := exec.LookPath("npm")
				if err != nil {
					axeErr = fmt.Errorf("axe-core is not in %s and npm is not installed to fetch it (or set NATTER_AXE to axe.min.js)", prefix)
					return
				}
				out, err := exec.Command(npm, "install", "--prefix", prefix, "--no-audit", "--no-fund", "axe-core@"+axeVersion).CombinedOutput()
				if err != nil {
					axeErr = fmt.Errorf("npm install axe-core@%s: %v\n%s", axeVersion, err, out)
					return
				}
			}
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			axeErr = fmt.Errorf("read axe-core: %w", err)
			return
		}
		axeSource = string(raw)
	})
	return axeSource, axeErr
}

// axeViolation is one rule axe found broken, with the elements that break it.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

// checkA11y runs axe-core (WCAG 2.1 A and AA rules and axe's best practices) on the page as it
// is now, once in the light theme and once in the dark one (the emulated prefers-color-scheme),
// and fails on any serious or critical violation. what names the view in the failure. Without
// axe-core and npm it skips its subtest, saying why.
func checkA11y(t *testing.T, tab context.Context, what string) {
	t.Helper()
	t.Run("axe "+what, func(t *testing.T) {
		src, err := axeScript()
		if err != nil {
			t.Skipf("accessibility check skipped: %v", err)
		}
		// The page's CSP does not apply to the DevTools protocol's evaluation.
		if !eval[bool](t, tab, `typeof window.axe === 'object'`) {
			eval[bool](t, tab, src+"\n;true")
		}
		defer setScheme(t, tab, "")
		for _, scheme := range []string{"light", "dark"} {
			setScheme(t, tab, scheme)
			raw := eval[string](t, tab, `axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']},
				resultTypes: ['violations']}).then(r => JSON.stringify(r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')))`)
			var found []axeViolation
			if err := json.Unmarshal([]byte(raw), &found); err != nil {
				t.Fatalf("axe's answer: %v", err)
			}
			var lines []string
			for _, v := range found {
				for _, n := range v.Nodes {
					lines = append(lines, fmt.Sprintf("%s (%s): %s at %v\n    %s", v.ID, v.Impact, v.Help, n.Target, strings.ReplaceAll(n.Summary, "\n", "\n    ")))
				}
			}
			if len(lines) > 0 {
				t.Errorf("%s, %s theme: %d serious or critical accessibility violations:\n%s", what, scheme, len(lines), strings.Join(lines, "\n"))
			}
		}
	})
}

// setScheme emulates the system's colour scheme ("light", "dark"), or stops emulating ("").
func setScheme(t *testing.T, tab context.Context, scheme string) {
	t.Helper()
	var features []*emulation.MediaFeature
	if scheme != "" {
		features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}
	}
	do(t, tab, "emulate prefers-color-scheme "+scheme, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: features})
		return err
	}))
}
