package server

import (
	"net/http"
	"strings"

	"github.com/natterchat/natter/persist"
)

// corsMethods and corsHeaders are all a cross-origin browser request may use: the normal
// methods, and the headers the API reads from browsers.
const (
	corsMethods = "GET, HEAD, POST, PUT, PATCH, DELETE"
	corsHeaders = "Authorization, Content-Type, X-Natter-CSRF, X-ClickClack-CSRF, X-Request-ID"
)

var corsAllowedHeaders = map[string]bool{"authorization": true, "content-type": true,
	"x-natter-csrf": true, "x-clickclack-csrf": true, "x-request-id": true}

var corsAllowedMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true,
	"PATCH": true, "DELETE": true}

// cors serves split deployments, where the web app is served from --public-url and the API from
// another origin: requests from exactly that origin get credentialed CORS headers (never a
// wildcard, never a reflected origin) and their preflights are answered; every other origin gets
// no CORS headers at all, so browsers keep it out. Same-origin requests are untouched.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		crossAllowed := origin != "" && s.publicOrigin != "" && strings.EqualFold(origin, s.publicOrigin)
		if crossAllowed {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", s.publicOrigin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Add("Vary", "Origin")
		}
		if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
			next.ServeHTTP(w, r)
			return
		}
		// A preflight.
		if !crossAllowed || !corsAllowedMethods[r.Header.Get("Access-Control-Request-Method")] || !corsHeadersAllowed(r) {
			w.Header().Del("Access-Control-Allow-Origin")
			w.Header().Del("Access-Control-Allow-Credentials")
			s.writeError(w, r, persist.Forbidden("this cross-origin request is not allowed"))
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Methods", corsMethods)
		h.Set("Access-Control-Allow-Headers", corsHeaders)
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
	})
}

func corsHeadersAllowed(r *http.Request) bool {
	for _, name := range strings.Split(r.Header.Get("Access-Control-Request-Headers"), ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name != "" && !corsAllowedHeaders[name] {
			return false
		}
	}
	return true
}
