package slackimport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/slackimport"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
	"github.com/natterchat/natter/server/blob"
)

// TestImportQuirks: a pin past Natter's 100 fails its batch after writes, and the batch is
// redone record by record so only that pin is lost; entries of the wrong shape, a numeric ts,
// an over-long text, a conversation of one person and the progress reports.
func TestImportQuirks(t *testing.T) {
	t.Parallel()
	store := persisttest.NewStore(t)
	ctx := context.Background()
	owner := persisttest.User(t, store, nil)
	w := persisttest.Workspace(t, store, owner.ID)

	var day list
	for i := range 101 {
		day = append(day, msg(ts(i, "000000"), "U1", fmt.Sprintf("pinned %d", i), obj{"pinned_to": list{"C1"}}))
	}
	day = append(day,
		[]byte(`{"type":"message","ts":1551430900.5,"user":"U1","text":"a numeric ts"}`),
		msg(ts(200, "000000"), "U1", strings.Repeat("long ", 9000), nil),
		msg(ts(150, "000000"), "U2", "notes attached", obj{"subtype": "file_share",
			"files": list{obj{"id": "F9", "name": "notes.txt", "url_private": "https://files.slack.com/F9"}}}),
		[]byte(`{"type":"message","ts":"1551431000.000000","user":"U1","text":{"not":"text"}}`))
	raw := make([]string, len(day))
	for i, m := range day {
		b, ok := m.([]byte)
		if !ok {
			b = mustJSON(t, m)
		}
		raw[i] = string(b)
	}
	e := export{
		"users.json":              []byte(`[{"id":"U1","name":"pat"},{"id":5,"name":"broken"}]`),
		"channels.json":           list{obj{"id": "C1", "name": "pins", "members": list{"U1"}}},
		"dms.json":                list{obj{"id": "D1", "members": list{"U1", "U1"}}},
		"pins/2019-03-01.json":    []byte("[" + strings.Join(raw, ",") + "]"),
		"D1/2019-03-01.json":      list{msg(ts(1, "000000"), "U1", "a note to self", nil)},
		"unrelated-top-file.json": list{},
		"org_users.json":          list{obj{"id": "U1", "name": "pat-again"}, obj{"id": "U2", "name": "olive", "real_name": "Olive"}},
		"__uploads/F9/notes.txt":  []byte("downloaded by a tool"),
	}
	var places []string
	uploads, err := blob.NewDisk(t.TempDir())
	require.NoError(t, err)
	o := slackimport.Options{Store: store, WorkspaceID: w.ID, Uploads: uploads, Progress: func(p slackimport.Progress) {
		places = append(places, p.Place+" "+p.Day)
	}}
	rep, err := slackimport.ImportArchive(ctx, e.zip(t), o)
	// The file downloaded into the archive is an upload of Olive's message.
	require.NoError(t, err)
	olive, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Message, error) {
		id, _, err := tx.HistoryLookup(ctx, persist.History{WorkspaceID: w.ID, Source: slackimport.Source}, persist.HistoryKindMessage, "C1/"+ts(150, "000000"))
		if err != nil {
			return persist.Message{}, err
		}
		return tx.MessageGet(ctx, persist.ActorFor(owner), id)
	})
	require.NoError(t, err)
	require.Equal(t, "Olive", olive.Author.DisplayName)
	require.Len(t, olive.Attachments, 1)
	stored, err := uploads.Open(ctx, olive.Attachments[0].StorageKey)
	require.NoError(t, err)
	defer stored.Close()
	body, err := io.ReadAll(stored)
	require.NoError(t, err)
	require.Equal(t, "downloaded by a tool", string(body))
	require.NoError(t, err)
	require.Equal(t, 104, rep.Counts["messages"], rep.Summary())
	require.Equal(t, 100, rep.Counts["pins"])
	require.Equal(t, 1, rep.Counts["files_attached"])
	require.Equal(t, 2, rep.Counts["people_created"], "pat from users.json, olive from org_users.json")
	reasons := []string{}
	for _, s := range rep.Skips {
		reasons = append(reasons, s.What+": "+s.Reason)
	}
	require.Len(t, reasons, 5, rep.Summary())
	require.Contains(t, reasons[0], "a person in users.json: unreadable entry")
	require.Contains(t, reasons[1], "direct conversation D1: a direct conversation has 2 to 32 members")
	require.Contains(t, reasons[2], "#pins message 1551431000.000000: unreadable")
	require.Equal(t, "pin of #pins message "+ts(100, "000000")+": a channel holds at most 100 pins", reasons[3])
	require.Equal(t, "messages of direct conversation D1: the conversation was skipped; its 1 day files were not read", reasons[4])
	require.Equal(t, []string{"people ", "#pins 2019-03-01"}, places)

	page, err := persist.WithTxV(ctx, store, func(tx *persist.Tx) (persist.Page, error) {
		id, _, err := tx.HistoryLookup(ctx, persist.History{WorkspaceID: w.ID, Source: slackimport.Source}, persist.HistoryKindChannel, "C1")
		if err != nil {
			return persist.Page{}, err
		}
		return tx.MessageList(ctx, persist.ActorFor(owner), persist.Place{ChannelID: id}, persist.Window{Mode: persist.WindowLatest, Limit: 3})
	})
	require.NoError(t, err)
	require.Equal(t, "a numeric ts", page.Messages[0].Body)
	long := page.Messages[2].Body
	require.Equal(t, persist.MaxBodyLength, utf8.RuneCountInString(long))
	require.True(t, strings.HasSuffix(long, "_(cut: the Slack message was longer)_"))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
