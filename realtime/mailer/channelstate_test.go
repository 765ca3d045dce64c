package mailer_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
)

// TestMutedOrLeftChannelSendsNoEmail (issue 30): a mention in a channel Bob muted, or in one he
// left, is no email; a mention where he is and has not muted is, and it is the only one.
func TestMutedOrLeftChannelSendsNoEmail(t *testing.T) {
	t.Parallel()
	w := newWorld(t, nil)
	channel := func(name string) string {
		r := w.h.Post(t, "/api/workspaces/"+w.ws.ID+"/channels", w.ada.Token, map[string]any{"name": name})
		r.RequireStatus(t, http.StatusCreated)
		return r.JSON(t)["channel"].(map[string]any)["id"].(string)
	}
	muted, left := channel("muted-here"), channel("left-here")
	w.h.Do(t, servertest.Request{Method: http.MethodPut, Path: "/api/channels/" + muted + "/notification-preference",
		Token: w.bob.Token, Body: map[string]any{"level": "muted"}}).RequireStatus(t, http.StatusOK)
	w.h.Post(t, "/api/channels/"+left+"/leave", w.bob.Token, nil).RequireStatus(t, http.StatusOK)

	w.post(t, w.ada, "/api/channels/"+muted+"/messages", "@bob in the muted channel")
	w.post(t, w.ada, "/api/channels/"+left+"/messages", "@bob in the channel he left")
	w.inGeneral(t, w.ada, "@bob in general")
	o := w.next(t)
	require.Equal(t, "sent", o.Result)
	require.Equal(t, w.bob.User.ID, o.UserID)
	w.quiet(t)
	mails := w.relay.Mails()
	require.Len(t, mails, 1)
	require.Contains(t, mails[0].Text, "@bob in general")
	require.NotContains(t, mails[0].Text, "muted channel")
	require.NotContains(t, mails[0].Text, "he left")
}
