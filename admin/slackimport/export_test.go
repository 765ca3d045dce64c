package slackimport_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"testing"
)

// export is a Slack export built by a test: entry name → content (a value encoded as JSON, or
// raw bytes written as they are).
type export map[string]any

// zip writes the export as Slack's tool does and opens it.
func (e export) zip(t testing.TB) *zip.Reader {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, v := range e {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		b, ok := v.([]byte)
		if !ok {
			if b, err = json.Marshal(v); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return zr
}

// obj is a JSON object, for short literals.
type obj = map[string]any

// list is a JSON array.
type list = []any

func slackUser(id, name, email string, more obj) obj {
	u := obj{"id": id, "name": name, "real_name": name + " Real", "profile": obj{"email": email, "real_name": name + " Real"}}
	for k, v := range more {
		u[k] = v
	}
	return u
}

func msg(ts, user, text string, more obj) obj {
	m := obj{"type": "message", "ts": ts, "text": text}
	if user != "" {
		m["user"] = user
	}
	for k, v := range more {
		m[k] = v
	}
	return m
}
