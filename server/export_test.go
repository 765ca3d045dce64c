package server_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// exportLines reads one .jsonl entry of an export archive.
func exportLines(t *testing.T, zr *zip.Reader, name string) []map[string]any {
	t.Helper()
	f, err := zr.Open(name)
	require.NoError(t, err, name)
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &v), name)
		out = append(out, v)
	}
	require.NoError(t, sc.Err())
	return out
}

func fieldsOf(lines []map[string]any, key string) []string {
	var out []string
	for _, l := range lines {
		if s, ok := l[key].(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func TestWorkspaceExportDownload(t *testing.T) {
	t.Parallel()
	e := newWSEnv(t)
	mod := e.join(t, persist.RoleModerator)
	member := e.join(t, persist.RoleMember)
	outsider := e.h.NewUser(t)
	path := "/api/workspaces/" + e.ws.ID + "/export"
	post := func(path, token string, body any) map[string]any {
		r := e.h.Post(t, path, token, body)
		require.Less(t, r.Status, 300, string(r.Body))
		return r.JSON(t)
	}
	channel := func(token, name, visibility string) string {
		c := post("/api/workspaces/"+e.ws.ID+"/channels", token, map[string]any{"name": name, "visibility": visibility})
		return c["channel"].(map[string]any)["id"].(string)
	}
	public := channel(member.Token, "open-room", "public")
	mine := channel(e.owner.Token, "owners-room", "private")
	theirs := channel(member.Token, "members-room", "private")
	post("/api/channels/"+public+"/messages", member.Token, map[string]any{"body": "in the open"})
	post("/api/channels/"+mine+"/messages", e.owner.Token, map[string]any{"body": "owner's secret"})
	post("/api/channels/"+theirs+"/messages", member.Token, map[string]any{"body": "member's secret"})
	dm := func(token string, ids ...string) string {
		return post("/api/dms", token, map[string]any{"workspace_id": e.ws.ID, "member_ids": ids})["conversation"].(map[string]any)["id"].(string)
	}
	ownerDM := dm(e.owner.Token, member.User.ID)
	otherDM := dm(mod.Token, member.User.ID)
	post("/api/dms/"+ownerDM+"/messages", member.Token, map[string]any{"body": "hello owner"})
	post("/api/dms/"+otherDM+"/messages", member.Token, map[string]any{"body": "between us two"})

	t.Run("OwnerDownloadsWhatTheyMayRead", func(t *testing.T) {
		t.Parallel()
		r := e.h.Get(t, path, e.owner.Token)
		r.RequireStatus(t, http.StatusOK)
		require.Equal(t, "application/zip", r.Header.Get("Content-Type"))
		require.True(t, strings.HasPrefix(r.Header.Get("Content-Disposition"), "attachment; filename="), r.Header.Get("Content-Disposition"))
		zr, err := zip.NewReader(bytes.NewReader(r.Body), int64(len(r.Body)))
		require.NoError(t, err)
		var manifest map[string]any
		f, err := zr.Open("manifest.json")
		require.NoError(t, err)
		require.NoError(t, json.NewDecoder(f).Decode(&manifest))
		require.Equal(t, "natter-workspace-export", manifest["format"])
		require.EqualValues(t, 1, manifest["version"])
		require.Equal(t, "owner", manifest["scope"])
		require.Equal(t, e.owner.User.ID, manifest["exported_by"])

		channels := fieldsOf(exportLines(t, zr, "channels.jsonl"), "id")
		require.Contains(t, channels, public)
		require.Contains(t, channels, mine, "a private channel the owner is in")
		require.NotContains(t, channels, theirs, "a private channel the owner is not in does not exist for them")
		dms := fieldsOf(exportLines(t, zr, "dms.jsonl"), "id")
		require.Equal(t, []string{ownerDM}, dms, "only the owner's own conversations")
		bodies := fieldsOf(exportLines(t, zr, "messages.jsonl"), "body")
		require.ElementsMatch(t, []string{"in the open", "owner's secret", "hello owner"}, bodies)
		for _, u := range exportLines(t, zr, "users.jsonl") {
			require.NotContains(t, u, "email", "an owner's export names nobody's address")
			require.NotContains(t, u, "password_hash")
		}
		require.NotContains(t, string(r.Body), "member's secret")
		require.NotContains(t, string(r.Body), "between us two")
	})

	t.Run("OthersGetTheOwnerRefusal", func(t *testing.T) {
		t.Parallel()
		for name, who := range map[string]servertest.Actor{"Moderator": mod, "Member": member, "Outsider": outsider} {
			r := e.h.Get(t, path, who.Token)
			r.RequireError(t, http.StatusForbidden, persist.CodeForbidden)
			require.Empty(t, r.Header.Get("Content-Disposition"), name)
			if name != "Outsider" {
				require.Equal(t, "workspace owner permission required", r.JSON(t)["error"], name)
			}
		}
		e.h.Get(t, path, "").RequireError(t, http.StatusUnauthorized, persist.CodeUnauthenticated)
		e.h.Get(t, "/api/workspaces/wsp_00000000000000000000000000/export", e.owner.Token).RequireError(t, http.StatusNotFound, persist.CodeNotFound)
	})

	t.Run("BotTokensAreRefused", func(t *testing.T) {
		t.Parallel()
		_, tok := persisttest.Bot(t, e.h.Store, e.owner.User, e.ws.ID, nil)
		r := e.h.Get(t, path, tok.Token)
		require.Equal(t, http.StatusForbidden, r.Status, string(r.Body))
	})
}
