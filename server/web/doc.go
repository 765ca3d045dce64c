// Package web is Natter's browser client: ES modules, CSS and one HTML page embedded in the
// binary and served as they are, with a strict Content-Security-Policy. The client talks only
// to the API under /api; this package knows nothing of it beyond the sign-in methods it is told
// to advertise. It imports only the standard library.
package web
