package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

//go:embed static
var static embed.FS

// Version names the web bundle. Set it at build time with
// -ldflags "-X github.com/natterchat/natter/server/web.Version=2026.11.26"; left empty, it is a
// digest of the embedded files, so any change to the client changes it. Open clients compare it
// with GET /web-version and offer a reload when it differs.
var Version string

// contentSecurityPolicy is sent with every response of the client: scripts and styles only from
// this origin (no inline style element; one inline script, the page's early.js, allowed by the
// hash of its text, so no other inline script runs), connections only to this origin (the API and
// its WebSocket), images from this origin only (uploads, pictures; https avatars of other hosts
// only when the operator turns remote avatars on), workers from this origin (the push service
// worker, the previews' parsers), frames only of this origin (a PDF upload in the browser's
// viewer; an HTML preview is a sandboxed srcdoc frame), the page itself framed by nobody, no
// plugins. An image from another host tells that host who looks at whom, so it is opt-in.
func contentSecurityPolicy(remoteAvatars bool, scriptHash string) string {
	img := "img-src 'self' data: blob:; "
	if remoteAvatars {
		img = "img-src 'self' data: blob: https:; "
	}
	return "default-src 'none'; script-src 'self' '" + scriptHash + "'; style-src 'self'; " + img +
		"connect-src 'self'; font-src 'self'; manifest-src 'self'; worker-src 'self'; frame-src 'self'; " +
		"base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"
}

// serviceWorker is the push service worker's file, served at /sw.js: a worker's scope is the
// folder of its script, and at the root it covers every page of the client.
const serviceWorker = "/assets/js/lazy/sw.js"

// entryModule is the page's one script; the modules it imports statically, transitively, are
// the page's preload list. A module reached only by import() (a panel's code, a preview's parser)
// is fetched when a view needs it, so a first visit does not pay for it.
const entryModule = "/assets/js/main.js"

// earlyScript is the classic script the page carries inline: it starts the first view's API
// reads before any module has arrived (a module, even preloaded, runs only once the page's
// graph has loaded).
const earlyScript = "/assets/js/early.js"

// staticImport matches the static import and re-export statements of a module; import() calls
// are not matched (no "from" clause, a parenthesis before the specifier).
var staticImport = regexp.MustCompile(`(?m)^\s*(?:import|export)\s+(?:[^'"()]*?\s+from\s+)?['"]([^'"]+)['"]`)

// Config is what the page advertises about the server it is served by.
type Config struct {
	// Version overrides the bundle version (a server restarted with a new one, in tests).
	// Default "": Version as set at build time, else a digest of the embedded files.
	Version string
	// DevAuth says magic links can be requested through the API (natter dev). Default false.
	DevAuth bool
	// Password says password sign-in is on. Default false.
	Password bool
	// Email says sign-in links are emailed on request. Default false.
	Email bool
	// Providers are the configured OAuth providers ("github", "oidc"). Default none.
	Providers []string
	// RemoteAvatars lets the page load avatars from other hosts (Gravatar, GitHub, any https
	// avatar_url). Default false: a person without a picture on this server shows their initial.
	RemoteAvatars bool
}

// asset is one embedded file ready to serve: its bytes, their gzip form and a strong ETag.
type asset struct {
	body, gz    []byte
	contentType string
	etag        string
}

// Handler serves the client: the page at / and at any other path outside /api (the client
// routes by path), its files under /assets/, the service worker at /sw.js, and /web-version.
type Handler struct {
	version string
	csp     string
	assets  map[string]*asset
	page    *asset
}

// bundle is what New derives from the embedded files alone, the same for every Handler: each
// file's bytes with their gzip form (maximum compression, costly), the page's preload list and
// the files' digest. A process builds it once: tests and in-process clusters start many
// servers, each of which would otherwise compress the whole client again.
type bundle struct {
	assets  map[string]*asset // read only once built: Handlers share it
	preload []string
	digest  string
	early   string // earlyScript's text, inline in the page
	// earlyHash is the CSP source allowing that text: 'sha256-…' of its exact bytes.
	earlyHash string
}

var loadBundle = sync.OnceValues(func() (*bundle, error) {
	h := &Handler{assets: map[string]*asset{}}
	sum := sha256.New()
	var names []string
	err := fs.WalkDir(static, "static/assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: list assets: %w", err)
	}
	sort.Strings(names)
	for _, p := range names {
		body, err := static.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("web: read %s: %w", p, err)
		}
		fmt.Fprintf(sum, "%s\x00%d\x00", p, len(body))
		sum.Write(body)
		// Every module opens with the checker's "// @ts-check" (tsc in .ci/run); the browser has no
		// use for it, and across the eager modules it would cost half a kilobyte of a first visit.
		if path.Ext(p) == ".js" {
			body = bytes.TrimPrefix(body, []byte("// @ts-check\n"))
		}
		h.assets[strings.TrimPrefix(p, "static")] = newAsset(body, contentType(p))
	}
	preload, err := h.staticGraph(entryModule)
	if err != nil {
		return nil, err
	}
	early := string(h.assets[earlyScript].body)
	// Inside a script element the HTML parser ends the script at "</script" and treats "<!--"
	// specially; neither may appear in the text.
	if low := strings.ToLower(early); strings.Contains(low, "</script") || strings.Contains(low, "<!--") {
		return nil, fmt.Errorf("web: %s cannot be inlined: it contains </script or <!--", earlyScript)
	}
	d := sha256.Sum256([]byte(early))
	return &bundle{assets: h.assets, preload: preload, digest: hex.EncodeToString(sum.Sum(nil))[:12],
		early: early, earlyHash: "sha256-" + base64.StdEncoding.EncodeToString(d[:])}, nil
})

// New renders the page for cfg over the embedded files (loaded once per process).
func New(cfg Config) (*Handler, error) {
	b, err := loadBundle()
	if err != nil {
		return nil, err
	}
	h := &Handler{assets: b.assets}
	preload := b.preload
	h.version = cfg.Version
	h.csp = contentSecurityPolicy(cfg.RemoteAvatars, b.earlyHash)
	if h.version == "" {
		h.version = Version
	}
	if h.version == "" {
		h.version = b.digest
	}
	tpl, err := template.ParseFS(static, "static/index.html")
	if err != nil {
		return nil, fmt.Errorf("web: parse page: %w", err)
	}
	providers := cfg.Providers
	if providers == nil {
		providers = []string{}
	}
	methods, err := json.Marshal(map[string]any{"dev_auth": cfg.DevAuth, "password": cfg.Password, "email": cfg.Email, "providers": providers,
		"remote_avatars": cfg.RemoteAvatars})
	if err != nil {
		return nil, err
	}
	var page bytes.Buffer
	// template.JS: the script's text goes in as it is, byte for byte what the CSP's hash covers.
	data := map[string]any{"Version": h.version, "Methods": string(methods), "Preload": preload, "Early": template.JS(b.early)}
	if err := tpl.Execute(&page, data); err != nil {
		return nil, fmt.Errorf("web: render page: %w", err)
	}
	h.page = newAsset(page.Bytes(), "text/html; charset=utf-8")
	return h, nil
}

// staticGraph lists entry and every module it imports statically, transitively, in a stable
// order; an import of a file that is not embedded is an error, so a broken page fails at start.
func (h *Handler) staticGraph(entry string) ([]string, error) {
	seen := map[string]bool{entry: true}
	queue := []string{entry}
	for i := 0; i < len(queue); i++ {
		a, ok := h.assets[queue[i]]
		if !ok {
			return nil, fmt.Errorf("web: %s imports a module that is not embedded", queue[i])
		}
		for _, dep := range importsOf(queue[i], a.body) {
			if !seen[dep] {
				seen[dep] = true
				queue = append(queue, dep)
			}
		}
	}
	sort.Strings(queue)
	return queue, nil
}

// importsOf lists the modules that the module at p (an asset path) imports statically.
func importsOf(p string, body []byte) []string {
	var deps []string
	for _, m := range staticImport.FindAllSubmatch(body, -1) {
		deps = append(deps, path.Join(path.Dir(p), string(m[1])))
	}
	return deps
}

// Version is the bundle version the page carries.
func (h *Handler) Version() string { return h.version }

func newAsset(body []byte, ctype string) *asset {
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	_, _ = zw.Write(body)
	_ = zw.Close()
	d := sha256.Sum256(body)
	return &asset{body: body, gz: gz.Bytes(), contentType: ctype, etag: `"` + hex.EncodeToString(d[:8]) + `"`}
}

func contentType(p string) string {
	switch path.Ext(p) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// ServeHTTP answers GET and HEAD; the caller sends /api paths elsewhere.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", h.csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch {
	case r.URL.Path == "/web-version":
		hd.Set("Cache-Control", "no-store")
		hd.Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, "{\"version\":%q}\n", h.version)
	case r.URL.Path == "/sw.js":
		h.serve(w, r, h.assets[serviceWorker])
	case strings.HasPrefix(r.URL.Path, "/assets/"):
		a, ok := h.assets[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h.serve(w, r, a)
	default:
		h.serve(w, r, h.page)
	}
}

// serve writes an asset, gzipped when the browser accepts it; browsers revalidate with the ETag
// (no-cache), so a new bundle is picked up on the next load without versioned file names.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, a *asset) {
	hd := w.Header()
	hd.Set("Content-Type", a.contentType)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", a.etag)
	hd.Add("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		hd.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	hd.Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}
