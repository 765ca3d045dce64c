package mailer_test

import (
	"mime"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
	"github.com/natterchat/natter/persist/persisttest"
)

func subject(t *testing.T, raw string) string {
	t.Helper()
	s, err := new(mime.WordDecoder).DecodeHeader(raw)
	require.NoError(t, err)
	return s
}

func TestMentionsInOneConversationAreOneEmail(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	// The longer delay leaves room for a slow machine to post all three before it ends.
	w.settings(t, w.bob, map[string]any{"email_delay": "15m"})
	first := w.inGeneral(t, w.ada, "@bob can you look at the build?")
	w.inGeneral(t, w.ada, "morning all, no mention here")
	w.inGeneral(t, w.ada, "@Bob also <b>the</b> deploy & docs")

	o := w.next(t)
	require.Equal(t, "sent", o.Result)
	require.Equal(t, w.bob.User.ID, o.UserID)
	m := w.relay.Wait(t, 1, 0)[0]
	require.Equal(t, []string{w.bob.User.Email}, m.To)
	require.Equal(t, "["+w.ws.Name+"] 2 mentions of you in #general", subject(t, m.Header.Get("Subject")))
	require.Contains(t, m.Text, "@bob can you look at the build?")
	require.Contains(t, m.Text, "@Bob also <b>the</b> deploy & docs")
	require.NotContains(t, m.Text, "no mention here")
	require.Contains(t, m.HTML, "@Bob also &lt;b&gt;the&lt;/b&gt; deploy &amp; docs", "message text is escaped in HTML")
	require.Less(t, strings.Index(m.Text, "build?"), strings.Index(m.Text, "deploy"), "oldest first")
	link := publicURL + "/" + w.ws.RouteID + "/" + w.general.RouteID + "#message=" + first["id"].(string)
	require.Contains(t, m.Text, link)
	require.Contains(t, m.HTML, `href="`+link+`"`)
	require.Equal(t, "List-Unsubscribe=One-Click", m.Header.Get("List-Unsubscribe-Post"))
	require.True(t, strings.HasPrefix(m.Header.Get("List-Unsubscribe"), "<"+publicURL+"/api/email/unsubscribe?token=eun_"))
	require.Equal(t, "auto-generated", m.Header.Get("Auto-Submitted"))
	w.quiet(t)
	require.Len(t, w.relay.Mails(), 1, "one email for the batch, none for Ada (the author)")
}

func TestReadingBeforeTheDelayCancels(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	w.settings(t, w.bob, map[string]any{"email_delay": "15m"})
	msg := w.inGeneral(t, w.ada, "@bob are you there?")
	w.h.Post(t, "/api/channels/"+w.general.ID+"/read", w.bob.Token, map[string]any{"seq": msg["channel_seq"]}).
		RequireStatus(t, http.StatusOK)
	o := w.next(t)
	require.Equal(t, "cancelled", o.Result)
	require.Equal(t, persist.EmailDropNothing, o.Reason)

	// Answering in the conversation is reading it too.
	dm := w.dm(t, w.ada, w.bob)
	w.post(t, w.ada, "/api/dms/"+dm+"/messages", "lunch?")
	w.post(t, w.bob, "/api/dms/"+dm+"/messages", "yes!")
	// Ada was answered too: her (shorter) delay runs from Bob's message, which she has not read.
	byUser := map[string]string{}
	for range 2 {
		o = w.next(t)
		byUser[o.UserID] = o.Result
	}
	require.Equal(t, map[string]string{w.bob.User.ID: "cancelled", w.ada.User.ID: "sent"}, byUser)
	require.Len(t, w.relay.Mails(), 1)
	require.Equal(t, "["+w.ws.Name+"] New message from Bob Builder", subject(t, w.relay.Mails()[0].Header.Get("Subject")))
}

func TestDirectMessagesAndFollowedThreads(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	carol := w.person(t, "Carol Chen", "carol")
	persisttest.Member(t, w.h.Store, w.ws.ID, carol.User.ID, persist.RoleMember)
	root := w.inGeneral(t, w.bob, "shall we ship on Friday?")
	// Bob follows his thread; Carol does not (no mention, never replied).
	w.post(t, w.ada, "/api/messages/"+root["id"].(string)+"/thread/replies", "Friday works")
	o := w.next(t)
	require.Equal(t, "sent", o.Result)
	require.Equal(t, w.bob.User.ID, o.UserID)
	m := w.relay.Wait(t, 1, 0)[0]
	require.Equal(t, "["+w.ws.Name+"] A new reply in a thread in #general", subject(t, m.Header.Get("Subject")))
	require.Contains(t, m.Text, "Friday works")
	require.Contains(t, m.Text, publicURL+"/"+w.ws.RouteID+"/"+root["route_id"].(string)+"#message=")
	w.quiet(t)
	require.Len(t, w.relay.Mails(), 1, "Carol follows no thread and was not mentioned")
}

func TestEmailNeverShowsWhatCannotBeRead(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	r := w.h.Post(t, "/api/workspaces/"+w.ws.ID+"/channels", w.ada.Token, map[string]any{"name": "secret", "visibility": "private"})
	r.RequireStatus(t, http.StatusCreated)
	secret := r.JSON(t)["channel"].(map[string]any)["id"].(string)
	w.post(t, w.ada, "/api/channels/"+secret+"/messages", "@bob the secret plan")
	// Queued while Bob could read #general, then Bob leaves the workspace's channel by removal.
	w.settings(t, w.bob, map[string]any{"email_delay": "15m"})
	w.inGeneral(t, w.ada, "@bob before you go")
	w.h.Do(t, servertest.Request{Method: http.MethodDelete, Path: "/api/workspaces/" + w.ws.ID + "/members/" + w.bob.User.ID,
		Token: w.ada.Token}).RequireStatus(t, http.StatusOK)
	// Removed before the delay ended: the batch is cancelled (or, when the removal came before
	// the consumer read the message, never opened).
	select {
	case o := <-w.outcomes:
		require.Equal(t, "cancelled", o.Result)
	case <-time.After(2 * testDelays["15m"]):
	}
	w.quiet(t)
	require.Empty(t, w.relay.Mails(), "a private channel's mention never reaches a non-member")
}

func TestEmailOffOrDelayOffSendsNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	w.settings(t, w.bob, map[string]any{"email_enabled": false})
	w.inGeneral(t, w.ada, "@bob off")
	w.settings(t, w.bob, map[string]any{"email_enabled": true, "email_delay": "off"})
	w.inGeneral(t, w.ada, "@bob delay off")
	w.quiet(t)
	require.Empty(t, w.relay.Mails())
}
