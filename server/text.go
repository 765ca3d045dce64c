package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/natterchat/natter/persist"
)

// Every text a client sends ends up compared with or stored in Postgres text, which holds
// neither NUL bytes nor invalid UTF-8 (SQLSTATE 22021). The edge refuses such text here, in one
// place per way in (path and query, JSON bodies, form and multipart fields), naming the field,
// before anything reaches the store; persist maps 22021 to 400 only as a backstop.

// validText reports whether s can be stored as Postgres text: valid UTF-8 without NUL bytes.
func validText(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }

// invalidText is the answer to a field holding text Postgres cannot store. Code: invalid_request.
func invalidText(field string) error {
	return persist.Invalid("%s must be valid UTF-8 text without NUL bytes", field)
}

// checkRequestText refuses a request whose path parameters or query parameters (names or
// values) are not valid text. enforce runs it for every route, public ones included.
// Codes: invalid_request.
func checkRequestText(r *http.Request) error {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		for i, k := range rc.URLParams.Keys {
			if i < len(rc.URLParams.Values) && !validText(rc.URLParams.Values[i]) {
				return invalidText("path parameter " + k)
			}
		}
	}
	// Only a percent escape can turn valid text into invalid text: without one, every name and
	// value is a piece of the raw query cut at ASCII bytes ('+' read as a space), valid when the
	// whole is. Most queries (ids, cursors) take this path and are not parsed into a map here.
	if raw := r.URL.RawQuery; strings.IndexByte(raw, '%') < 0 && validText(raw) {
		return nil
	}
	for k, vs := range r.URL.Query() {
		if !validText(k) {
			return invalidText("a query parameter name")
		}
		for _, v := range vs {
			if !validText(v) {
				return invalidText("query parameter " + k)
			}
		}
	}
	return nil
}

// checkFormText refuses a parsed form (r.PostForm) holding invalid text. Codes: invalid_request.
func checkFormText(r *http.Request) error {
	for k, vs := range r.PostForm {
		if !validText(k) {
			return invalidText("a form field name")
		}
		for _, v := range vs {
			if !validText(v) {
				return invalidText("form field " + k)
			}
		}
	}
	return nil
}

// checkJSONText refuses a JSON body whose strings (keys or values) hold invalid UTF-8 or an
// escaped NUL (\u0000), naming the first such field by its path (name, member_ids[1],
// config.x). encoding/json would otherwise replace invalid bytes with U+FFFD silently and pass
// NUL on to Postgres. A body that is not JSON is left to the decoder's own error.
// Codes: invalid_request.
func checkJSONText(body []byte) error {
	if utf8.Valid(body) && !bytes.Contains(body, []byte(`\u0000`)) {
		return nil // the common case: nothing to find
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	type level struct {
		array bool
		index int
		key   string
	}
	var stack []level
	path := func() string {
		var b strings.Builder
		for i, l := range stack {
			switch {
			case l.array:
				b.WriteString("[" + strconv.Itoa(l.index) + "]")
			default:
				if i > 0 {
					b.WriteByte('.')
				}
				b.WriteString(l.key)
			}
		}
		if b.Len() == 0 {
			return "the body"
		}
		return "field " + b.String()
	}
	expectKey := false
	start := dec.InputOffset()
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return nil // malformed: decodeJSON's own error follows
		}
		end := dec.InputOffset()
		raw := body[start:end]
		start = end
		// A value ends an object member (next comes a key) or moves an array on.
		advance := func() {
			if n := len(stack); n > 0 {
				if stack[n-1].array {
					stack[n-1].index++
				} else {
					expectKey = true
				}
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, level{})
				expectKey = true
			case '[':
				stack = append(stack, level{array: true})
				expectKey = false
			case '}', ']':
				stack = stack[:len(stack)-1]
				advance()
			}
		case string:
			if expectKey {
				stack[len(stack)-1].key = t
				expectKey = false
				if !utf8.Valid(raw) || strings.IndexByte(t, 0) >= 0 {
					return invalidText("a field name")
				}
				continue
			}
			if !utf8.Valid(raw) || strings.IndexByte(t, 0) >= 0 {
				return invalidText(path())
			}
			advance()
		default:
			advance()
		}
	}
}
