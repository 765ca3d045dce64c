package admin_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"maps"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// world is a workspace built through the API of one deployment, with its people.
type world struct {
	h                       *servertest.Harness
	ws                      string
	owner, mod, ana, ben    servertest.Actor
	general, secret, closed string
	dm, group               string
	roots                   []string
	upload                  string
	botToken                string
}

func (w *world) call(t *testing.T, method, path, token string, body any) map[string]any {
	t.Helper()
	r := w.h.Do(t, servertest.Request{Method: method, Path: path, Token: token, Body: body})
	require.Less(t, r.Status, 300, "%s %s: %s", method, path, r.Body)
	if len(r.Body) == 0 {
		return nil
	}
	return r.JSON(t)
}

func idOf(m map[string]any, key string) string { return m[key].(map[string]any)["id"].(string) }

// buildWorld makes a workspace holding every kind of record an export carries.
func buildWorld(t *testing.T) *world {
	w := &world{h: servertest.New(t)}
	h := w.h
	w.owner, w.mod, w.ana, w.ben = h.NewUser(t), h.NewUser(t), h.NewUser(t), h.NewUser(t)
	w.ws = idOf(w.call(t, "POST", "/api/workspaces", w.owner.Token, map[string]any{"name": "Acme Rockets"}), "workspace")
	for _, u := range []servertest.Actor{w.mod, w.ana, w.ben} {
		persisttest.Member(t, h.Store, w.ws, u.User.ID, persist.RoleMember)
	}
	w.call(t, "PATCH", "/api/workspaces/"+w.ws+"/moderation/members/"+w.mod.User.ID, w.owner.Token, map[string]any{"role": "moderator"})
	ch := func(token string, body map[string]any) string {
		return idOf(w.call(t, "POST", "/api/workspaces/"+w.ws+"/channels", token, body), "channel")
	}
	w.general = ch(w.owner.Token, map[string]any{"name": "general", "display_title": "General talk", "sidebar_section": "Team"})
	w.secret = ch(w.ana.Token, map[string]any{"name": "secret", "visibility": "private"})
	w.call(t, "POST", "/api/channels/"+w.secret+"/members", w.ana.Token, map[string]any{"user_id": w.owner.User.ID})
	w.closed = ch(w.owner.Token, map[string]any{"name": "old-launch", "kind": "ops", "external_url": "https://ci.example.com/7"})

	// An upload, attached to a message, and the workspace's icon.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", "plan.txt")
	require.NoError(t, err)
	_, _ = fw.Write([]byte("the launch plan, version 3"))
	require.NoError(t, mw.Close())
	r := h.Do(t, servertest.Request{Method: "POST", Path: "/api/uploads?workspace_id=" + w.ws, Token: w.ana.Token, Body: &buf,
		Header: map[string]string{"Content-Type": mw.FormDataContentType()}})
	r.RequireStatus(t, http.StatusCreated)
	w.upload = idOf(r.JSON(t), "upload")

	post := func(place, token string, body map[string]any) string {
		return idOf(w.call(t, "POST", place+"/messages", token, body), "message")
	}
	gen := "/api/channels/" + w.general
	first := post(gen, w.owner.Token, map[string]any{"body": "Welcome to **Acme**", "nonce": "n-1"})
	second := post(gen, w.ana.Token, map[string]any{"body": "Here is the plan", "upload_id": w.upload})
	third := post(gen, w.ben.Token, map[string]any{"body": "Quoting the welcome", "quoted_message_id": first})
	gone := post(gen, w.ben.Token, map[string]any{"body": "oops, wrong channel"})
	w.roots = []string{first, second, third, gone}
	reply := func(root, token, body string) string {
		return idOf(w.call(t, "POST", "/api/messages/"+root+"/thread/replies", token, map[string]any{"body": body}), "message")
	}
	reply(first, w.ana.Token, "thanks!")
	dropped := reply(first, w.ben.Token, "a reply taken back")
	reply(first, w.mod.Token, "glad to be here")
	w.call(t, "DELETE", "/api/messages/"+dropped, w.ben.Token, nil)
	// Thread read positions (issue 30): the owner, who follows the root, read the first reply
	// only; the moderator, who does not follow the second root, opened its thread.
	w.call(t, "POST", "/api/messages/"+first+"/thread/read", w.owner.Token, map[string]any{"seq": 1})
	w.call(t, "PATCH", "/api/me", w.ana.Token, map[string]any{"time_zone": "Europe/Paris"})
	w.call(t, "DELETE", "/api/messages/"+gone, w.ben.Token, nil)
	w.call(t, "PATCH", "/api/messages/"+second, w.ana.Token, map[string]any{"body": "Here is the plan (v3)"})
	for _, rx := range []struct{ token, emoji string }{{w.ana.Token, "🚀"}, {w.ben.Token, "🚀"}, {w.owner.Token, "👍"}} {
		w.call(t, "POST", "/api/messages/"+first+"/reactions", rx.token, map[string]any{"emoji": rx.emoji})
	}
	w.call(t, "POST", "/api/channels/"+w.general+"/pins", w.mod.Token, map[string]any{"message_id": second})
	post("/api/channels/"+w.secret, w.ana.Token, map[string]any{"body": "owner and ana only"})
	post("/api/channels/"+w.closed, w.owner.Token, map[string]any{"body": "launch retro notes"})
	w.call(t, "PATCH", "/api/channels/"+w.closed, w.owner.Token, map[string]any{"archived": true})

	w.dm = idOf(w.call(t, "POST", "/api/dms", w.ana.Token, map[string]any{"workspace_id": w.ws, "member_ids": []string{w.ben.User.ID}}), "conversation")
	w.group = idOf(w.call(t, "POST", "/api/dms", w.owner.Token, map[string]any{"workspace_id": w.ws,
		"member_ids": []string{w.ana.User.ID, w.mod.User.ID}}), "conversation")
	dmFirst := post("/api/dms/"+w.dm, w.ben.Token, map[string]any{"body": "lunch?"})
	reply(dmFirst, w.ana.Token, "yes, noon")
	post("/api/dms/"+w.group, w.mod.Token, map[string]any{"body": "agenda for monday"})
	w.call(t, "DELETE", "/api/dms/"+w.group, w.owner.Token, nil) // hidden for the owner
	w.call(t, "POST", "/api/channels/"+w.general+"/read", w.ana.Token, map[string]any{"seq": 2})
	w.call(t, "POST", "/api/dms/"+w.dm+"/read", w.ana.Token, map[string]any{"seq": 1})

	bot := w.call(t, "POST", "/api/workspaces/"+w.ws+"/bots", w.owner.Token, map[string]any{"display_name": "Deploy Bot",
		"handle": "deploybot", "scopes": []string{"bot:write"}})
	w.botToken = bot["bot_token"].(map[string]any)["token"].(string)
	w.call(t, "PUT", "/api/bots/self/commands", w.botToken, map[string]any{"commands": []map[string]any{
		{"command": "/deploy", "description": "ship it", "args_hint": "<env>"}}})
	post(gen, w.botToken, map[string]any{"body": "deployed v3"})
	w.call(t, "PATCH", "/api/workspaces/"+w.ws, w.owner.Token, map[string]any{"icon_url": "/api/uploads/" + w.upload})
	w.call(t, "PATCH", "/api/workspaces/"+w.ws+"/moderation/members/"+w.ana.User.ID, w.mod.Token,
		map[string]any{"timeout_minutes": 60, "moderation_note": "cool down"})
	// Ben leaves: his messages stay, written by a former member.
	w.call(t, "DELETE", "/api/workspaces/"+w.ws+"/members/"+w.ben.User.ID, w.owner.Token, nil)
	return w
}

// TestExportImportRoundTrip: a workspace exported by the operator and imported into an empty
// deployment answers every read as the original does, once ids are mapped (an import makes new
// ids); and the export of the imported workspace holds what the first did.
func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	a := buildWorld(t)
	dir := t.TempDir()
	first := filepath.Join(dir, "first.zip")
	out, err := run(t, "admin", "export", "--database-url", persisttest.StoreURL(t, a.h.Store), "--upload-dir",
		a.h.Uploads.Dir(), "--workspace", a.ws, "--out", first)
	require.NoError(t, err)
	require.Contains(t, out, "exported to "+first)

	b := servertest.New(t)
	out, err = run(t, "admin", "import", "natter", "--database-url", persisttest.StoreURL(t, b.Store), "--upload-dir",
		b.Uploads.Dir(), "--json", first)
	require.NoError(t, err)
	var rep struct {
		WorkspaceID string `json:"workspace_id"`
		SkipCount   int    `json:"skip_count"`
		Skips       []any  `json:"skips"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Zero(t, rep.SkipCount, "skips: %v", rep.Skips)

	ids := persisttest.ImportedIDs(t, b.Store, rep.WorkspaceID)
	require.Equal(t, rep.WorkspaceID, ids[a.ws])
	back := map[string]string{} // B's id (and route id) → A's
	for from, to := range ids {
		back[to] = from
		for _, letter := range []string{"T", "C", "D", "M"} {
			back[persist.RouteID(letter, to)] = persist.RouteID(letter, from)
		}
	}
	unmap := func(raw []byte) string {
		s := string(raw)
		for to, from := range back {
			s = strings.ReplaceAll(s, to, from)
		}
		return s
	}
	as := func(u servertest.Actor) string { return persisttest.Session(t, b.Store, ids[u.User.ID]) }
	same := func(path string, who servertest.Actor, drop ...string) {
		t.Helper()
		ra := a.h.Get(t, path, who.Token)
		rb := b.Get(t, unmapPath(path, ids), as(who))
		require.Equal(t, ra.Status, rb.Status, "%s: %s", path, rb.Body)
		got, want := unmap(rb.Body), string(ra.Body)
		if strings.HasPrefix(path, "/api/dms?") {
			// A conversation lists its members by id: new ids, another order.
			got, want = sortedMembers(t, got), sortedMembers(t, want)
		}
		require.JSONEq(t, withoutKeys(t, want, drop...), withoutKeys(t, got, drop...), path)
	}
	ws := "/api/workspaces/" + a.ws
	same(ws, a.owner)
	same(ws+"/members", a.owner)
	same(ws+"/moderation/members", a.owner)
	same(ws+"/channels", a.owner)
	same(ws+"/channels", a.ana) // her unread counts
	same(ws+"/moderation/channels", a.owner)
	same("/api/channels/"+a.secret+"/members", a.owner)
	for _, c := range []string{a.general, a.secret, a.closed} {
		same("/api/channels/"+c+"/messages?limit=200", a.owner)
		same("/api/channels/"+c+"/pins", a.owner)
	}
	for _, m := range a.roots {
		same("/api/messages/"+m, a.ana)
		same("/api/messages/"+m+"/thread", a.owner)
	}
	same(ws+"/threads", a.owner) // read positions: one unread reply
	same(ws+"/threads", a.mod)
	same("/api/dms?workspace_id="+a.ws, a.ana)
	same("/api/dms?workspace_id="+a.ws, a.owner) // the hidden group conversation stays hidden
	same("/api/dms/"+a.dm+"/messages", a.ana)
	same("/api/dms/"+a.group+"/messages", a.mod)
	same("/api/search?workspace_id="+a.ws+"&q=plan", a.ana)
	same(ws+"/bot-commands", a.owner)
	same(ws+"/bots", a.owner, "tokens") // tokens are never exported
	ua, ub := a.h.Get(t, "/api/uploads/"+a.upload, a.ana.Token), b.Get(t, "/api/uploads/"+ids[a.upload], as(a.ana))
	ub.RequireStatus(t, http.StatusOK)
	require.Equal(t, ua.Body, ub.Body, "the file's bytes")
	for _, h := range []string{"Content-Type", "Content-Disposition", "ETag", "Last-Modified"} {
		require.Equal(t, ua.Header.Get(h), ub.Header.Get(h), h)
	}

	// The export of the imported workspace holds what the first did, ids mapped.
	second := filepath.Join(dir, "second.zip")
	_, err = run(t, "admin", "export", "--database-url", persisttest.StoreURL(t, b.Store), "--upload-dir",
		b.Uploads.Dir(), "--workspace", rep.WorkspaceID, "--out", second)
	require.NoError(t, err)
	ea, eb := readArchive(t, first), readArchive(t, second)
	require.ElementsMatch(t, slices.Collect(mapKeys(ea)), slices.Collect(mapKeys(unmapNames(eb, unmap))))
	for name, body := range eb {
		name = unmap([]byte(name))
		want := ea[name]
		if name == "manifest.json" {
			require.JSONEq(t, withoutKeys(t, want, "exported_at"), withoutKeys(t, unmap([]byte(body)), "exported_at"))
			continue
		}
		require.Equal(t, canonLines(t, want), canonLines(t, unmap([]byte(body))), name)
	}

	// A second run of the same archive into the same workspace writes nothing.
	out, err = run(t, "admin", "import", "natter", "--database-url", persisttest.StoreURL(t, b.Store), "--upload-dir",
		b.Uploads.Dir(), "--workspace", rep.WorkspaceID, first)
	require.NoError(t, err)
	require.Contains(t, out, "messages: 0 created, 0 matched, 13 already imported")
	require.Len(t, persisttest.ImportedIDs(t, b.Store, rep.WorkspaceID), len(ids))
}

func unmapPath(path string, ids map[string]string) string {
	for from, to := range ids {
		path = strings.ReplaceAll(path, from, to)
	}
	return path
}

func withoutKeys(t *testing.T, raw string, keys ...string) string {
	t.Helper()
	if len(keys) == 0 {
		return raw
	}
	var v any
	require.NoError(t, json.Unmarshal([]byte(raw), &v), raw)
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range keys {
				delete(x, k)
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return string(out)
}

// canonLines is a .jsonl entry as a sorted list of lines, each with its arrays of members
// sorted: the order of ids (new ones, mapped back) is not the order of the originals.
func canonLines(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for line := range strings.Lines(body) {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			out = append(out, line) // an upload's bytes
			continue
		}
		if ms, ok := v["members"].([]any); ok {
			slices.SortFunc(ms, func(x, y any) int { return strings.Compare(fmt.Sprint(x), fmt.Sprint(y)) })
		}
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		out = append(out, string(raw))
	}
	slices.Sort(out)
	return out
}

// readArchive reads every entry of a zip into memory (the test's archives are small).
func readArchive(t *testing.T, path string) map[string]string {
	t.Helper()
	zr, err := zip.OpenReader(path)
	require.NoError(t, err)
	defer zr.Close()
	out := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		require.NoError(t, err)
		b, err := io.ReadAll(rc)
		require.NoError(t, err)
		rc.Close()
		out[f.Name] = string(b)
	}
	return out
}

func mapKeys(m map[string]string) iter.Seq[string] { return maps.Keys(m) }

func unmapNames(m map[string]string, unmap func([]byte) string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[unmap([]byte(k))] = v
	}
	return out
}

// sortedMembers sorts the members of each conversation of a DM listing by id.
func sortedMembers(t *testing.T, raw string) string {
	t.Helper()
	var v struct {
		Conversations []map[string]any `json:"conversations"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &v))
	for _, c := range v.Conversations {
		ms, _ := c["members"].([]any)
		slices.SortFunc(ms, func(x, y any) int {
			return strings.Compare(x.(map[string]any)["id"].(string), y.(map[string]any)["id"].(string))
		})
	}
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return string(out)
}
