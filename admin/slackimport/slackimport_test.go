package slackimport_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/admin/slackimport"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

// day 2019-03-01 09:00 UTC, Slack's seconds.
const t0 = 1551430800

func ts(offset int, micros string) string { return strconv.Itoa(t0+offset) + "." + micros }

// sampleExport has every field and quirk the importer handles (see TestImportSlackExport).
func sampleExport() export {
	root := ts(0, "000100")
	return export{
		"users.json": list{
			slackUser("U1", "ann", "Ann.Old@Example.com", nil),
			slackUser("U2", "bob.smith", "bob@example.com", obj{"is_admin": true}),
			slackUser("U3", "carol", "carol@example.com", obj{"deleted": true}),
			slackUser("UBOT", "deploy", "", obj{"is_bot": true, "profile": obj{"bot_id": "B1", "real_name": "Deploy"}}),
		},
		"channels.json": list{
			obj{"id": "C1", "name": "general", "created": t0 - 86400, "creator": "U1", "members": list{"U1", "U2"},
				"topic": obj{"value": "company-wide"}},
			obj{"id": "C2", "name": "random", "created": t0 - 86400, "is_archived": true, "members": list{"U1"}},
		},
		"groups.json": list{obj{"id": "G1", "name": "secret", "created": t0, "members": list{"U2", "U3"}}},
		"dms.json":    list{obj{"id": "D1", "created": t0, "members": list{"U1", "U2"}}},
		"mpims.json":  list{obj{"id": "M1", "name": "mpdm-ann--bob--dora-1", "created": t0, "members": list{"U1", "U2", "U7"}}},
		// Out of order on purpose: the day is imported in ts order.
		"general/2019-03-01.json": list{
			msg(ts(60, "000200"), "U2", "a reply in the thread", obj{"thread_ts": root}),
			msg(root, "U1", "hello <@U2>, see <#C2|random> &amp; <https://example.com|the site>", obj{
				"thread_ts": root, "edited": obj{"user": "U1", "ts": ts(30, "000000")},
				"reactions": list{obj{"name": "+1", "users": list{"U2", "U9"}, "count": 2}, obj{"name": "party-parrot", "users": list{"U1"}},
					obj{"name": "wave::skin-tone-6", "users": list{"U2"}}, obj{"name": "heart::skin-tone-2", "users": list{"U1"}}, obj{"name": "tada", "users": list{"U1"}}},
				"pinned_to": list{"C1"}}),
			msg(ts(120, "000000"), "U2", "first reply of a lost thread", obj{"thread_ts": ts(-86400, "000000")}),
			msg(ts(180, "000000"), "U1", "second reply of the lost thread", obj{"thread_ts": ts(-86400, "000000")}),
			msg(ts(240, "000000"), "", "deployed v2", obj{"subtype": "bot_message", "bot_id": "B2", "username": "ci-bot"}),
			msg(ts(250, "000000"), "", "known bot speaks", obj{"subtype": "bot_message", "bot_id": "B1"}),
			msg(ts(260, "000000"), "U2", "<@U2> has joined the channel", obj{"subtype": "channel_join"}),
			msg(ts(270, "000000"), "U1", "waves", obj{"subtype": "me_message"}),
			msg(ts(280, "000000"), "U1", "", obj{"subtype": "file_share", "files": list{
				obj{"id": "F1", "name": "plan.txt", "mimetype": "text/plain", "url_private": "https://files.slack.com/F1/plan.txt"},
				obj{"id": "F2", "name": "old.pdf", "mode": "hidden_by_limit"},
			}}),
			msg(ts(290, "000000"), "U1", "huddle notes", obj{"subtype": "huddle_thread"}),
			msg("not-a-time", "U1", "broken clock", nil),
			msg(ts(300, "000000"), "U7", "I am not in users.json", obj{"user_profile": obj{"real_name": "Dora Explorer"}}),
			msg(ts(310, "000000"), "U3", "a word from carol", nil),
			msg(ts(320, "000000"), "U1", "", obj{"subtype": "message_changed", "hidden": true}),
		},
		"general/2019-03-02.json":               list{msg(ts(86400, "000000"), "U1", "a reply the next day", obj{"thread_ts": root})},
		"random/2019-03-01.json":                []byte(`[{"type":"message","ts":"1551430800.000001","user":"U1","text":"kept"}, {"type":`),
		"secret/2019-03-01.json":                list{msg(ts(5, "000000"), "U2", "whispered plans", nil)},
		"D1/2019-03-01.json":                    list{msg(ts(6, "000000"), "U2", "a direct word", nil)},
		"mpdm-ann--bob--dora-1/2019-03-01.json": list{msg(ts(7, "000000"), "U7", "group chat", nil)},
		"stray/2019-03-01.json":                 list{msg(ts(8, "000000"), "U1", "nobody lists me", nil)},
	}
}

// TestImportSlackExport imports an export holding every kind of record and quirk, then reads
// it back through the HTTP API as a member would, and imports it again.
func TestImportSlackExport(t *testing.T) {
	t.Parallel()
	h := harness{servertest.New(t)}
	ctx := context.Background()
	ann := h.NewUser(t)
	w := persisttest.Workspace(t, h.Store, ann.User.ID)
	files := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(files, "F1"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(files, "F1", "plan.txt"), []byte("the plan"), 0o644))
	eventsBefore := len(h.Events(t, w.ID))
	socket, status := h.DialSocket(t, servertest.Dial{Path: "/api/realtime/ws?workspace_id=" + w.ID, Token: ann.Token})
	require.Equal(t, 101, status)
	defer socket.Close()

	o := slackimport.Options{Store: h.Store, WorkspaceID: w.ID, Uploads: h.Uploads, FilesDir: files,
		EmailMap: map[string]string{"ann.old@example.com": strings.ToLower(ann.User.Email)}, BatchSize: 4}
	rep, err := slackimport.ImportArchive(ctx, sampleExport().zip(t), o)
	require.NoError(t, err)
	t.Log(rep.Summary())
	require.Equal(t, map[string]int{
		"people_matched": 1, "people_created": 1, "deactivated_people": 1, "bots": 1,
		"placeholders": 3, // U7 Dora (in mpims.json and a message), U9 (a reactor), B2 (ci-bot)
		"channels":     2, "private_channels": 1, "direct_conversations": 1, "group_conversations": 1,
		"messages": 17, "replies": 3, "replies_without_root": 1, "reactions": 6, "pins": 1,
		"files_attached": 1, "files_noted": 1, "unknown_subtypes": 1, "skipped": 4,
	}, rep.Counts)
	reasons := map[string]string{}
	for _, s := range rep.Skips {
		reasons[s.What] = s.Reason
	}
	require.Contains(t, reasons["#general message not-a-time"], "bad timestamp")
	require.Contains(t, reasons["#general message "+ts(320, "000000")], "message_changed")
	require.Contains(t, reasons["folder stray"], "day files were not read")
	require.Contains(t, reasons["#random 2019-03-01"], "malformed JSON")

	// Nothing but the channels' creation reached the event log.
	evs := h.Events(t, w.ID)[eventsBefore:]
	types := []string{}
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	require.Equal(t, []string{"channel.created", "channel.created", "channel.created"}, types, "general, random, secret")

	chans := map[string]persist.Channel{}
	var listed struct{ Channels []persist.Channel }
	h.Get(t, "/api/workspaces/"+w.ID+"/channels", ann.Token).Decode(t, &listed)
	for _, c := range listed.Channels {
		chans[c.Name] = c
	}
	require.Contains(t, chans, "general")
	require.Contains(t, chans, "random")
	require.NotContains(t, chans, "secret", "Ann was not in the private channel")
	require.True(t, chans["random"].Archived)
	require.Equal(t, "company-wide", chans["general"].DisplayTitle)
	general := chans["general"]
	require.Equal(t, int64(10), general.LastSeq)
	require.Equal(t, int64(0), *general.UnreadCount, "Ann was in #general at Slack: its history is read")

	var page persist.Page
	h.Get(t, "/api/channels/"+general.ID+"/messages?limit=100", ann.Token).Decode(t, &page)
	require.Len(t, page.Messages, 10)
	bodies := []string{}
	for i, m := range page.Messages {
		require.Equal(t, int64(i+1), *m.ChannelSeq, "roots are numbered 1..last_seq")
		if i > 0 {
			require.False(t, m.CreatedAt.Before(page.Messages[i-1].CreatedAt), "ts order")
		}
		bodies = append(bodies, m.Author.DisplayName+": "+m.Body)
	}
	root := page.Messages[0]
	require.Equal(t, ann.User.ID, root.AuthorID, "matched by the mapped email")
	require.Equal(t, "hello @bob_smith, see #random & [the site](https://example.com)", root.Body)
	require.True(t, time.Unix(t0, 100000).Equal(root.CreatedAt))
	require.True(t, time.Unix(t0+30, 0).Equal(*root.EditedAt))
	require.Equal(t, int64(2), root.ThreadState.ReplyCount)
	emoji := map[string]int64{}
	for _, r := range root.Reactions {
		emoji[r.Emoji] = r.Count
	}
	// Slack's names become the characters the client's picker sends; a tone where one applies
	// (skin-tone-6 is the darkest); a custom emoji keeps its name.
	require.Equal(t, map[string]int64{"👍": 2, ":party-parrot:": 1, "👋🏿": 1, "❤️": 1, "🎉": 1}, emoji)
	annName := ann.User.DisplayName // matched: the account keeps its own name
	require.Equal(t, []string{
		annName + ": hello @bob_smith, see #random & [the site](https://example.com)",
		"bob.smith Real: first reply of a lost thread",
		"ci-bot: deployed v2",
		"deploy Real: known bot speaks",
		"bob.smith Real: @bob_smith has joined the channel",
		annName + ": _waves_",
		annName + ": 📎 old.pdf (file not imported: hidden by Slack's plan limits)",
		annName + ": huddle notes\n_(a Slack huddle_thread message)_",
		"Dora Explorer: I am not in users.json",
		"carol Real: a word from carol",
	}, bodies[:10])
	require.Len(t, page.Messages[6].Attachments, 1)
	plan := page.Messages[6].Attachments[0]
	require.Equal(t, "plan.txt", plan.Filename)
	require.Equal(t, "the plan", string(h.Get(t, "/api/uploads/"+plan.ID, ann.Token).Body))

	// Threads: the root's replies across days; the lost thread's first reply became its root.
	var thread struct{ Replies []persist.Message }
	h.Get(t, "/api/messages/"+root.ID+"/thread", ann.Token).Decode(t, &thread)
	require.Equal(t, []string{"a reply in the thread", "a reply the next day"}, bodiesOf(thread.Replies))
	h.Get(t, "/api/messages/"+page.Messages[1].ID+"/thread", ann.Token).Decode(t, &thread)
	require.Equal(t, []string{"second reply of the lost thread"}, bodiesOf(thread.Replies))

	var pins struct{ Pins []persist.Pin }
	h.Get(t, "/api/channels/"+general.ID+"/pins", ann.Token).Decode(t, &pins)
	require.Len(t, pins.Pins, 1)
	require.Equal(t, root.ID, pins.Pins[0].MessageID)

	// Bob (created, a moderator) reads the private channel and finds it in search; Ann does not.
	bob := personOf(t, h.Harness, w.ID, "U2")
	bobToken := persisttest.Session(t, h.Store, bob)
	require.Equal(t, []string{"whispered plans"}, h.search(t, w.ID, "whispered", bobToken))
	require.Empty(t, h.search(t, w.ID, "whispered", ann.Token))
	require.Equal(t, []string{"deployed v2"}, h.search(t, w.ID, "deployed", ann.Token))

	var dms struct{ Conversations []persist.DM }
	h.Get(t, "/api/dms?workspace_id="+w.ID, ann.Token).Decode(t, &dms)
	require.Len(t, dms.Conversations, 2)
	for _, d := range dms.Conversations {
		require.Equal(t, int64(1), d.LastSeq)
		require.Equal(t, int64(0), d.UnreadCount, "Ann was in both at Slack")
	}

	// A live post continues the sequence and is the one unread message.
	h.Post(t, "/api/channels/"+general.ID+"/messages", bobToken, map[string]any{"body": "back to work"}).RequireStatus(t, 201)
	h.Get(t, "/api/workspaces/"+w.ID+"/channels", ann.Token).Decode(t, &listed)
	for _, c := range listed.Channels {
		if c.ID == general.ID {
			require.Equal(t, int64(11), c.LastSeq)
			require.Equal(t, int64(1), *c.UnreadCount)
		}
	}

	// Ann's socket, open through the import, saw the two channels she may see appear, then the
	// live post: no imported message, reaction or pin.
	seen := []string{}
	for len(seen) == 0 || seen[len(seen)-1] == "channel.created" {
		seen = append(seen, socket.Next(t).Type)
	}
	require.Equal(t, []string{"channel.created", "channel.created", "message.created"}, seen)

	// Again: nothing is written twice, the same records are skipped.
	again, err := slackimport.ImportArchive(ctx, sampleExport().zip(t), o)
	require.NoError(t, err)
	// People, placeholders, places and messages are found; the same records are skipped.
	require.Equal(t, map[string]int{"already_imported": 4 + 3 + 5 + 17, "skipped": 4}, again.Counts)
	require.Equal(t, rep.Skips, again.Skips)
	require.Len(t, h.Events(t, w.ID), eventsBefore+3+1)
	h.Get(t, "/api/channels/"+general.ID+"/messages?limit=100", ann.Token).Decode(t, &page)
	require.Len(t, page.Messages, 11)
	require.Len(t, page.Messages[0].Reactions, 5)
	require.Len(t, page.Messages[6].Attachments, 1)
}

func bodiesOf(msgs []persist.Message) []string {
	out := []string{}
	for _, m := range msgs {
		out = append(out, m.Body)
	}
	return out
}

// personOf is the Natter user a Slack id became.
func personOf(t *testing.T, h *servertest.Harness, workspaceID, slackID string) string {
	t.Helper()
	ctx := context.Background()
	id, err := persist.WithTxV(ctx, h.Store, func(tx *persist.Tx) (string, error) {
		id, _, err := tx.HistoryLookup(ctx, persist.History{WorkspaceID: workspaceID, Source: slackimport.Source}, persist.HistoryKindPerson, slackID)
		return id, err
	})
	require.NoError(t, err)
	require.NotEmpty(t, id)
	return id
}

type harness struct{ *servertest.Harness }

// search returns the bodies of the messages a search finds.
func (h harness) search(t *testing.T, workspaceID, q, token string) []string {
	t.Helper()
	var page struct {
		Results []struct{ Snippet string }
	}
	h.Get(t, "/api/search?"+url.Values{"workspace_id": {workspaceID}, "q": {q}}.Encode(), token).Decode(t, &page)
	out := []string{}
	for _, r := range page.Results {
		out = append(out, r.Snippet)
	}
	return out
}
