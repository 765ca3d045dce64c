package server

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/natterchat/natter/persist"
)

// Fuzz targets for the parsers of outside input at the HTTP edge. Each checks properties of what
// it accepts, not only that nothing panics. .ci/run runs each for a few seconds; a crash found is
// committed under testdata/fuzz/<Target> as a seed.

// requireBadRequest fails unless err is a 4xx application error: bad input never becomes a 500.
func requireBadRequest(t *testing.T, input any, err error) {
	t.Helper()
	e, ok := persist.ErrorOf(err)
	if !ok || statusFor(e.Code) < 400 || statusFor(e.Code) >= 500 {
		t.Fatalf("%q: want a 4xx application error, got %v", input, err)
	}
}

// requireStorableStrings fails when any string reachable from v is not text Postgres can hold.
func requireStorableStrings(t *testing.T, input any, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		if !validText(v.String()) {
			t.Fatalf("%q: accepted %q", input, v.String())
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			requireStorableStrings(t, input, v.Elem())
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			requireStorableStrings(t, input, v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			requireStorableStrings(t, input, k)
			requireStorableStrings(t, input, v.MapIndex(k))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				requireStorableStrings(t, input, v.Field(i))
			}
		}
	}
}

// fuzzBody is the property of every JSON route: a body either decodes into storable text or is
// refused with a 4xx.
func fuzzBody[T any](f *testing.F, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Add([]byte("{\"body\": \"a\\u0000b\"}"))
	f.Add([]byte("{\"body\": \"a\xffb\"}"))
	f.Add([]byte(`{"body": "x"} {"body": "y"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var dst T
		if err := decodeJSONBytes(body, &dst); err != nil {
			requireBadRequest(t, body, err)
			return
		}
		requireStorableStrings(t, body, reflect.ValueOf(dst))
	})
}

func FuzzMessageBody(f *testing.F) {
	fuzzBody[messageCreateRequest](f, `{"body": "hello", "nonce": "n-1", "kind": "agent_tool"}`,
		`{"body": 5}`, `[]`, `{"quoted_message_id": null}`)
}

func FuzzBotBody(f *testing.F) {
	fuzzBody[botCreateRequest](f, `{"display_name": "Bot", "handle": "@bot", "scopes": ["bot:read", "messages:write"]}`,
		`{"initial_token": "yes"}`, `{"scopes": [1]}`)
}

func FuzzDMBody(f *testing.F) {
	fuzzBody[map[string]any](f, `{"workspace_id": "wsp_1", "member_ids": ["usr_1", "usr_2"]}`, `{"config": {"a": [1, {"b": "c"}]}}`)
}

func FuzzSetupClaimBody(f *testing.F) {
	fuzzBody[setupClaimRequest](f, `{"code": "ABCD-EFGH-JKLM"}`, `{"code": ""}`)
}

// FuzzCheckJSONText: the walker never panics, and a body it passes holds no string Postgres
// cannot store once decoded.
func FuzzCheckJSONText(f *testing.F) {
	for _, s := range []string{`{}`, `{"a": ["b", {"c": "d"}]}`, "{\"\\u0000\": 1}", "[\"\xc3\x28\"]", `"x"`, `{"a":`, `[[[[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		err := checkJSONText(body)
		if err != nil {
			requireBadRequest(t, body, err)
			return
		}
		var v any
		if json.Unmarshal(body, &v) == nil {
			requireStorableStrings(t, body, reflect.ValueOf(v))
			if !utf8.Valid(body) {
				t.Fatalf("%q: passed invalid UTF-8 that encoding/json would replace silently", body)
			}
		}
	})
}

// FuzzThreadQuery: the window query of threads and message lists gives a window within the
// limits, or invalid_request.
func FuzzThreadQuery(f *testing.F) {
	for _, s := range []string{"", "limit=50", "after_seq=3", "before_seq=-1", "around_seq=9&limit=0", "latest=true&mode=latest",
		"after_seq=1&before_seq=2", "limit=201", "latest=maybe", "after_seq=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		for _, over := range []overMax{clampLimit, defaultLimit} {
			win, err := parseWindow(q, over)
			if err != nil {
				requireBadRequest(t, raw, err)
				continue
			}
			if win.Limit < 1 || win.Limit > persist.MaxPageLimit || win.Seq < 0 {
				t.Fatalf("%q: window out of bounds: %+v", raw, win)
			}
		}
	})
}

// FuzzRequestText: path and query text either passes as storable text or is refused with 400.
func FuzzRequestText(f *testing.F) {
	for _, s := range []string{"q=hello", "q=%00", "workspace_id=%FF", "%00=x", "a=1&a=%C3%28", "nonce=n%E2%82%AC",
		"q=a\xffb", "\xc3=x", "q=\x00", "q=a+b&c=\xe2\x82\xac"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := httptest.NewRequest(http.MethodGet, "/api/search", nil)
		r.URL.RawQuery = raw
		if err := checkRequestText(r); err != nil {
			requireBadRequest(t, raw, err)
			return
		}
		for k, vs := range r.URL.Query() {
			requireStorableStrings(t, raw, reflect.ValueOf(append(vs, k)))
		}
	})
}

// BenchmarkCheckRequestText is the text check every request pays, on a WebSocket handshake's
// query (ids and a cursor, nothing escaped) and on one with an escape.
func BenchmarkCheckRequestText(b *testing.B) {
	for name, raw := range map[string]string{"Plain": "workspace_id=wsp_01m8bv3m8xrsc22sh2m7jdqp5d&after_cursor=12345",
		"Escaped": "workspace_id=wsp_01m8bv3m8xrsc22sh2m7jdqp5d&q=caf%C3%A9"} {
		b.Run(name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/api/realtime/ws", nil)
			r.URL.RawQuery = raw
			b.ReportAllocs()
			for b.Loop() {
				if err := checkRequestText(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzUploadMultipart: a multipart upload body gives the file part (with a storable name) and the
// workspace field, or an error the handler turns into a 4xx; nothing panics.
func FuzzUploadMultipart(f *testing.F) {
	const boundary = "natterfuzzboundary"
	seed := func(name, workspace string, data string) []byte {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.SetBoundary(boundary)
		if workspace != "" {
			_ = mw.WriteField("workspace_id", workspace)
		}
		w, _ := mw.CreateFormFile("file", name)
		_, _ = io.WriteString(w, data)
		_ = mw.Close()
		return buf.Bytes()
	}
	f.Add(seed("a.txt", "wsp_1", "hello"))
	f.Add(seed("\xff.png", "", "x"))
	f.Add(seed("a.txt", "wsp\x00", ""))
	f.Add([]byte("--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nno end"))
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/api/uploads", bytes.NewReader(body))
		r.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
		_, file, workspace, err := nextFilePart(r)
		if err != nil {
			requireBadRequest(t, body, uploadReadError(err))
			return
		}
		if !validText(file.FileName()) || !validText(workspace) || strings.TrimSpace(workspace) != workspace {
			t.Fatalf("%q: accepted file name %q, workspace %q", body, file.FileName(), workspace)
		}
		_, _ = io.Copy(io.Discard, file)
	})
}
