package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/gobwas/ws"
	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
)

// ccClient makes HTTP calls the way a ClickClack runtime does: JSON in and out, with either a
// bearer token or the cc_session cookie plus X-ClickClack-CSRF on writes (what ClickClack's SDK
// sends when it holds no token). It never sends a Natter header name: its transport fails the
// test if anything does.
type ccClient struct {
	t      *testing.T
	base   string // the API base, as a ClickClack runtime stores it
	token  string // Authorization: Bearer, when set
	cookie string // the cc_session cookie, when no token
	http   *http.Client
}

func newCCClient(t *testing.T, base string) *ccClient {
	return &ccClient{t: t, base: base, http: &http.Client{Transport: clickClackHeadersOnly{t, http.DefaultTransport}}}
}

// withToken is a client for the same base holding a bearer token.
func (c *ccClient) withToken(token string) *ccClient {
	return &ccClient{t: c.t, base: c.base, token: token, http: c.http}
}

// clickClackHeadersOnly refuses requests that carry a header under Natter's own name.
type clickClackHeadersOnly struct {
	t    *testing.T
	next http.RoundTripper
}

func (g clickClackHeadersOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	for name := range r.Header {
		if strings.HasPrefix(strings.ToLower(name), "x-natter-") {
			g.t.Errorf("the ClickClack client sent %s; it knows only X-ClickClack-* names", name)
		}
	}
	return g.next.RoundTrip(r)
}

// ccResponse is an answer: status, headers and the JSON object of the body.
type ccResponse struct {
	status int
	header http.Header
	body   map[string]any
}

// call sends method to path (relative to base, or absolute) with a JSON body (nil: none) and
// extra headers, and decodes the answer.
func (c *ccClient) call(method, path string, body any, header map[string]string) ccResponse {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(c.t, err)
		r = bytes.NewReader(raw)
	}
	return c.send(method, path, r, "application/json", header)
}

func (c *ccClient) send(method, path string, body io.Reader, contentType string, header map[string]string) ccResponse {
	c.t.Helper()
	url := path
	if !strings.HasPrefix(path, "http") {
		url = c.base + path
	}
	req, err := http.NewRequest(method, url, body)
	require.NoError(c.t, err)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	switch {
	case c.token != "":
		req.Header.Set("Authorization", "Bearer "+c.token)
	case c.cookie != "":
		req.AddCookie(&http.Cookie{Name: "cc_session", Value: c.cookie})
		if method != http.MethodGet {
			req.Header.Set("X-ClickClack-CSRF", "1")
		}
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	out := ccResponse{status: resp.StatusCode, header: resp.Header}
	if len(raw) > 0 {
		require.NoError(c.t, json.Unmarshal(raw, &out.body), "%s %s answered %s", method, path, raw)
	}
	return out
}

func (c *ccClient) get(path string) ccResponse {
	c.t.Helper()
	return c.call(http.MethodGet, path, nil, nil)
}

func (c *ccClient) post(path string, body any) ccResponse {
	c.t.Helper()
	return c.call(http.MethodPost, path, body, nil)
}

// upload posts a file as the multipart field "file", as ClickClack's SDK does.
func (c *ccClient) upload(path, filename, content string) ccResponse {
	c.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", filename)
	require.NoError(c.t, err)
	_, err = fw.Write([]byte(content))
	require.NoError(c.t, err)
	require.NoError(c.t, mw.Close())
	return c.send(http.MethodPost, path, &buf, mw.FormDataContentType(), nil)
}

// want fails unless the answer has status, and returns its body.
func (r ccResponse) want(t *testing.T, status int) map[string]any {
	t.Helper()
	require.Equal(t, status, r.status, "answer: %v", r.body)
	return r.body
}

// field walks keys down nested JSON objects and fails, naming the path, where one is missing.
func field(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for i, k := range keys {
		m, ok := v.(map[string]any)
		require.True(t, ok, "%s is not an object in %v", strings.Join(keys[:i], "."), v)
		v, ok = m[k]
		require.True(t, ok, "%s is missing from %v", strings.Join(keys[:i+1], "."), m)
	}
	return v
}

// str is field for a string.
func str(t *testing.T, v any, keys ...string) string {
	t.Helper()
	s, ok := field(t, v, keys...).(string)
	require.True(t, ok, "%s is not a string", strings.Join(keys, "."))
	return s
}

// list is field for an array.
func list(t *testing.T, v any, keys ...string) []any {
	t.Helper()
	a, ok := field(t, v, keys...).([]any)
	require.True(t, ok, "%s is not an array", strings.Join(keys, "."))
	return a
}

// ccSocket is a realtime socket as a ClickClack runtime opens it: the token in the
// clickclack.bearer.<token> subprotocol, resuming after a cursor.
type ccSocket struct {
	*servertest.Socket
}

func dialCC(t *testing.T, h *servertest.Harness, workspaceID, cursor, token string) ccSocket {
	t.Helper()
	path := "/api/realtime/ws?workspace_id=" + workspaceID
	if cursor != "" {
		path += "&after_cursor=" + cursor
	}
	s, status := h.DialSocket(t, servertest.Dial{Path: path, Protocols: []string{"clickclack.bearer." + token}})
	require.Equal(t, http.StatusSwitchingProtocols, status)
	require.Equal(t, "clickclack.bearer."+token, s.Protocol, "the offered subprotocol is echoed back")
	return ccSocket{s}
}

// await reads events until one of type typ whose payload satisfies match (nil: any), and
// returns the whole envelope as the client read it.
func (s ccSocket) await(t *testing.T, typ string, match func(payload map[string]any) bool) map[string]any {
	t.Helper()
	for {
		f, ok := s.ReadFrame(t)
		require.True(t, ok, "the socket ended while %s was awaited", typ)
		switch f.Header.OpCode {
		case ws.OpPing:
			s.Send(t, ws.NewPongFrame(f.Payload))
			continue
		case ws.OpClose:
			code, reason := ws.ParseCloseFrameData(f.Payload)
			t.Fatalf("the socket closed with %d %q while %s was awaited", code, reason, typ)
		case ws.OpText:
		default:
			continue
		}
		var env map[string]any
		require.NoError(t, json.Unmarshal(f.Payload, &env), "one event per text frame")
		payload, ok := env["payload"].(map[string]any)
		require.True(t, ok, "the payload is an object: %s", f.Payload)
		if env["type"] == typ && (match == nil || match(payload)) {
			return env
		}
	}
}

// about matches an event payload naming message_id id.
func about(id string) func(map[string]any) bool {
	return func(p map[string]any) bool { return p["message_id"] == id }
}
