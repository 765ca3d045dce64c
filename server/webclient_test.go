package server_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/server"
)

// TestWebClient checks how the router serves the browser client: every path outside /api is
// the page (the client routes by path), assets come gzipped and revalidated, each response
// carries a Content-Security-Policy that allows one inline script by its hash, and /api keeps its JSON 404s.
func TestWebClient(t *testing.T) {
	t.Parallel()
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.DevAuth = true; c.PasswordAuth = true }))

	t.Run("PageAtRootAndDeepLinks", func(t *testing.T) {
		t.Parallel()
		for _, path := range []string{"/", "/T0123/C0456"} {
			res := h.Do(t, servertest.Request{Method: "GET", Path: path})
			res.RequireStatus(t, http.StatusOK)
			require.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
			csp := res.Header.Get("Content-Security-Policy")
			require.Contains(t, csp, "default-src 'none'")
			require.Contains(t, csp, "frame-ancestors 'none'")
			require.NotContains(t, csp, "unsafe-inline")
			require.NotContains(t, csp, "unsafe-eval")
			require.NotContains(t, csp, "nonce-")
			require.Contains(t, string(res.Body), `<script type="module" src="/assets/js/main.js"></script>`)
			// Every script is a file of this origin but one: the inline early.js, allowed by the
			// hash of its exact text and by nothing else.
			var inline []string
			for _, m := range regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(string(res.Body), -1) {
				if !strings.Contains(m[1], ` src="/assets/`) {
					require.Empty(t, strings.TrimSpace(m[1]), "an inline script has no attributes: %s", m[1])
					inline = append(inline, m[2])
				}
			}
			require.Len(t, inline, 1, "one inline script")
			src, err := os.ReadFile(filepath.Join("web", "static", "assets", "js", "early.js"))
			require.NoError(t, err)
			require.Equal(t, strings.TrimPrefix(string(src), "// @ts-check\n"), inline[0], "the inline script is early.js")
			sum := sha256.Sum256([]byte(inline[0]))
			require.Contains(t, strings.Split(csp, "; "), "script-src 'self' 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
			require.NotContains(t, string(res.Body), "<style")
		}
	})

	t.Run("StaticModulesPreloaded", func(t *testing.T) {
		t.Parallel()
		page := string(h.Do(t, servertest.Request{Method: "GET", Path: "/"}).Body)
		// Preloaded at low priority: the first view's API reads (early.js) go ahead of them on
		// HTTP/1.1's six connections.
		links := regexp.MustCompile(`<link rel="modulepreload" fetchpriority="low" href="([^"]+)">`).FindAllStringSubmatch(page, -1)
		preloaded := map[string]bool{}
		for _, l := range links {
			preloaded[l[1]] = true
			h.Do(t, servertest.Request{Method: "GET", Path: l[1]}).RequireStatus(t, http.StatusOK)
		}
		// What the first view imports is preloaded, so the import graph costs one wave of requests.
		for _, m := range []string{"main.js", "store.js", "actions.js", "views/shell.js", "views/list.js", "views/row.js",
			"views/registry.js", "views/bots/index.js", "views/bots/agentmsg.js", "views/moderation/standing.js"} {
			require.True(t, preloaded["/assets/js/"+m], "%s is imported by the first view and not preloaded", m)
		}
		// What only a panel or a preview needs is fetched when it opens, not on a first visit.
		for _, m := range []string{"lazy/preview.js", "lazy/switcher.js", "lazy/sw.js", "views/bots/bots.js", "views/bots/integrations.js",
			"views/bots/subscriptions.js", "views/moderation/directory.js", "views/moderation/guests.js", "views/moderation/archived.js",
			// Menus, keys and header buttons open these; the sign-in view is for the signed out; the
			// command menu for a message that starts with "/" (issue 30's room for new features).
			"views/signin.js", "views/profile.js", "views/notify.js", "views/shortcuts.js", "views/privatechannel.js",
			"views/moderation/invites.js", "views/bots/ui.js", "views/commands.js"} {
			require.False(t, preloaded["/assets/js/"+m], "%s is preloaded but only a panel needs it", m)
		}
	})

	t.Run("PageAdvertisesSignInMethods", func(t *testing.T) {
		t.Parallel()
		res := h.Do(t, servertest.Request{Method: "GET", Path: "/"})
		m := regexp.MustCompile(`<meta name="natter-auth" content="([^"]*)">`).FindStringSubmatch(string(res.Body))
		require.Len(t, m, 2)
		var methods struct {
			DevAuth   bool     `json:"dev_auth"`
			Password  bool     `json:"password"`
			Providers []string `json:"providers"`
		}
		require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(m[1])), &methods))
		require.True(t, methods.DevAuth)
		require.True(t, methods.Password)
		require.Empty(t, methods.Providers)
	})

	t.Run("AssetsGzippedAndRevalidated", func(t *testing.T) {
		t.Parallel()
		plain := h.Do(t, servertest.Request{Method: "GET", Path: "/assets/js/main.js", Header: map[string]string{"Accept-Encoding": "identity"}})
		plain.RequireStatus(t, http.StatusOK)
		require.Equal(t, "text/javascript; charset=utf-8", plain.Header.Get("Content-Type"))
		require.Equal(t, "nosniff", plain.Header.Get("X-Content-Type-Options"))
		require.Empty(t, plain.Header.Get("Content-Encoding"))
		gz := h.Do(t, servertest.Request{Method: "GET", Path: "/assets/js/main.js", Header: map[string]string{"Accept-Encoding": "gzip"}})
		require.Equal(t, "gzip", gz.Header.Get("Content-Encoding"))
		zr, err := gzip.NewReader(bytes.NewReader(gz.Body))
		require.NoError(t, err)
		unzipped, err := io.ReadAll(zr)
		require.NoError(t, err)
		require.Equal(t, plain.Body, unzipped)
		etag := plain.Header.Get("ETag")
		require.NotEmpty(t, etag)
		again := h.Do(t, servertest.Request{Method: "GET", Path: "/assets/js/main.js", Header: map[string]string{"If-None-Match": etag}})
		again.RequireStatus(t, http.StatusNotModified)
		h.Do(t, servertest.Request{Method: "GET", Path: "/assets/js/nope.js"}).RequireStatus(t, http.StatusNotFound)
	})

	// Web Push needs a service worker whose scope covers every page: its script is served from
	// the root, and the policy admits workers from this origin only.
	t.Run("ServiceWorkerAtRoot", func(t *testing.T) {
		t.Parallel()
		page := h.Do(t, servertest.Request{Method: "GET", Path: "/"})
		require.Contains(t, strings.Split(page.Header.Get("Content-Security-Policy"), "; "), "worker-src 'self'")
		sw := h.Do(t, servertest.Request{Method: "GET", Path: "/sw.js", Header: map[string]string{"Accept-Encoding": "identity"}})
		sw.RequireStatus(t, http.StatusOK)
		require.Equal(t, "text/javascript; charset=utf-8", sw.Header.Get("Content-Type"))
		require.Contains(t, strings.Split(sw.Header.Get("Content-Security-Policy"), "; "), "worker-src 'self'")
		for _, listener := range []string{"'push'", "'notificationclick'"} {
			require.Contains(t, string(sw.Body), "addEventListener("+listener)
		}
		require.NotContains(t, string(page.Body), `href="/assets/js/lazy/sw.js"`, "the worker is not a module of the page")
	})

	t.Run("BundleVersion", func(t *testing.T) {
		t.Parallel()
		page := h.Do(t, servertest.Request{Method: "GET", Path: "/"})
		m := regexp.MustCompile(`<meta name="natter-version" content="([^"]+)">`).FindStringSubmatch(string(page.Body))
		require.Len(t, m, 2)
		res := h.Do(t, servertest.Request{Method: "GET", Path: "/web-version"})
		res.RequireStatus(t, http.StatusOK)
		require.Equal(t, "no-store", res.Header.Get("Cache-Control"))
		require.Equal(t, m[1], res.JSON(t)["version"])
	})

	t.Run("APIKeepsJSONErrors", func(t *testing.T) {
		t.Parallel()
		h.Do(t, servertest.Request{Method: "GET", Path: "/api/nope"}).RequireError(t, http.StatusNotFound, persist.CodeRouteNotFound)
		h.Do(t, servertest.Request{Method: "GET", Path: "/api"}).RequireError(t, http.StatusNotFound, persist.CodeRouteNotFound)
		// Metrics are off here: still the JSON 404, never the page.
		h.Do(t, servertest.Request{Method: "GET", Path: "/metrics"}).RequireError(t, http.StatusNotFound, persist.CodeRouteNotFound)
		h.Do(t, servertest.Request{Method: "POST", Path: "/"}).RequireStatus(t, http.StatusMethodNotAllowed)
	})
}

// TestWebClientSource holds the client to its own rules: no innerHTML, outerHTML,
// insertAdjacentHTML, document.write or eval anywhere, so text a person wrote cannot become
// markup or code; and no view file over 300 lines.
func TestWebClientSource(t *testing.T) {
	t.Parallel()
	banned := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function\(`)
	root := filepath.Join("web", "static", "assets", "js")
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		require.Empty(t, banned.FindAllString(string(src), -1), "%s", path)
		require.LessOrEqual(t, strings.Count(string(src), "\n"), 300, "%s is over 300 lines", path)
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 10)
}

// TestWebClientAvatarPolicy: by default the page may load images only from this server, so an
// avatar on Gravatar or GitHub is never fetched (it would tell that host who looks at whom);
// an operator who turns remote avatars on gets https images back, and the page is told so.
func TestWebClientAvatarPolicy(t *testing.T) {
	t.Parallel()
	imgSrc := func(t *testing.T, h *servertest.Harness) (string, bool) {
		res := h.Do(t, servertest.Request{Method: "GET", Path: "/"})
		res.RequireStatus(t, http.StatusOK)
		m := regexp.MustCompile(`img-src ([^;]*);`).FindStringSubmatch(res.Header.Get("Content-Security-Policy"))
		require.Len(t, m, 2, "the CSP names img-src")
		meta := regexp.MustCompile(`<meta name="natter-auth" content="([^"]*)">`).FindStringSubmatch(string(res.Body))
		require.Len(t, meta, 2)
		var methods struct {
			RemoteAvatars bool `json:"remote_avatars"`
		}
		require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(meta[1])), &methods))
		return m[1], methods.RemoteAvatars
	}
	t.Run("OffByDefault", func(t *testing.T) {
		t.Parallel()
		src, remote := imgSrc(t, servertest.New(t))
		require.Equal(t, "'self' data: blob:", src)
		require.False(t, remote)
	})
	t.Run("OnWhenTheOperatorSaysSo", func(t *testing.T) {
		t.Parallel()
		src, remote := imgSrc(t, servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.RemoteAvatars = true })))
		require.Equal(t, "'self' data: blob: https:", src)
		require.True(t, remote)
	})
}
