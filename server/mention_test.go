package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natterchat/natter/admin/servertest"
	"github.com/natterchat/natter/persist"
)

// mentionsOf is the bodies of who's Mentions view of the chat's workspace, newest first, read
// page by page with limit.
func (c *chat) mentionsOf(t *testing.T, who servertest.Actor, limit string) []string {
	t.Helper()
	var bodies []string
	cursor := ""
	for {
		r := c.h.Get(t, "/api/workspaces/"+c.ws.ID+"/mentions?limit="+limit+"&cursor="+cursor, who.Token)
		r.RequireStatus(t, http.StatusOK)
		var page persist.MentionPage
		r.Decode(t, &page)
		for _, m := range page.Messages {
			bodies = append(bodies, m.Body)
		}
		if page.NextCursor == nil {
			return bodies
		}
		cursor = *page.NextCursor
	}
}

// privateChannel creates a private channel as the owner with members added.
func (c *chat) privateChannel(t *testing.T, name string, members ...servertest.Actor) string {
	t.Helper()
	r := c.h.Post(t, "/api/workspaces/"+c.ws.ID+"/channels", c.owner.Token, map[string]any{"name": name, "visibility": "private"})
	r.RequireStatus(t, http.StatusCreated)
	var got struct{ Channel persist.Channel }
	r.Decode(t, &got)
	for _, m := range members {
		c.h.Post(t, "/api/channels/"+got.Channel.ID+"/members", c.owner.Token, map[string]any{"user_id": m.User.ID}).
			RequireStatus(t, http.StatusCreated)
	}
	return got.Channel.ID
}

// TestMentionList pins the Mentions view (issue 30; docs/messages.md, "Mentions"): the messages
// that name the reader's handle where they may read, and the broadcasts @here, @channel and
// @everyone of the places they are in, newest first.
func TestMentionList(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)

	t.Run("WhoABroadcastAddresses", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		suffix := c.ws.ID[len(c.ws.ID)-6:]
		c.withHandle(t, c.alice, "alice-"+suffix)
		guest := c.join(t, persist.RoleGuest)
		general := channelMessages(c.general.ID)
		random := c.channel(t, "random")
		secret := c.privateChannel(t, "secret", c.mod)
		_, dm := c.openDM(t, c.owner, c.alice.User.ID)

		c.say(t, c.owner, general, "@here standup in 5")
		c.say(t, c.owner, general, "mail ops@here.example, @channels is a word, @hereafter too")
		c.say(t, c.mod, general, "deploy at noon (@Channel)")
		c.say(t, c.alice, general, "@everyone my own broadcast")
		c.say(t, c.mod, general, "ask @ALICE-"+suffix+" about it")
		c.h.Post(t, "/api/channels/"+random.ID+"/leave", c.alice.Token, nil).RequireStatus(t, http.StatusOK)
		c.say(t, c.owner, channelMessages(random.ID), "@channel in a channel alice left")
		c.say(t, c.owner, channelMessages(secret), "@channel secret plans, @alice-"+suffix+" may not read this")
		c.say(t, c.owner, dmMessages(dm.ID), "@here are you around?")
		c.say(t, c.owner, channelMessages(c.guestRoom.ID), "@everyone welcome, guests")
		c.reply(t, c.owner, c.say(t, c.mod, general, "a thread").ID, "@everyone in a reply")

		require.Equal(t, []string{
			"@everyone in a reply",
			"@everyone welcome, guests",
			"@here are you around?",
			"ask @ALICE-" + suffix + " about it",
			"deploy at noon (@Channel)",
			"@here standup in 5",
		}, c.mentionsOf(t, c.alice, "2"), "alice, read two at a time")
		require.Equal(t, []string{
			"@everyone in a reply",
			"@everyone welcome, guests",
			"@channel secret plans, @alice-" + suffix + " may not read this",
			"@channel in a channel alice left",
			"@everyone my own broadcast",
			"@here standup in 5",
		}, c.mentionsOf(t, c.mod, "50"), "the moderator: in #random and #secret, not in the DM")
		require.Equal(t, []string{"@everyone welcome, guests"}, c.mentionsOf(t, guest, "50"), "a guest is in the guest channel only")

		late := c.join(t, persist.RoleMember)
		require.Empty(t, c.mentionsOf(t, late, "50"), "broadcasts from before one joined the workspace address others")
	})

	t.Run("EditsAndDeletions", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		general := channelMessages(c.general.ID)
		m := c.say(t, c.owner, general, "no one in particular")
		require.Empty(t, c.mentionsOf(t, c.alice, "50"))
		c.h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/messages/" + m.ID, Token: c.owner.Token,
			Body: map[string]any{"body": "edited: @here look"}}).RequireStatus(t, http.StatusOK)
		require.Equal(t, []string{"edited: @here look"}, c.mentionsOf(t, c.alice, "50"), "an edit that adds a broadcast")
		c.del(t, c.owner, "/api/messages/"+m.ID).RequireStatus(t, http.StatusOK)
		require.Empty(t, c.mentionsOf(t, c.alice, "50"), "a deleted message mentions no one")
	})

	t.Run("BadInput", func(t *testing.T) {
		t.Parallel()
		c := newChat(t, h)
		path := "/api/workspaces/" + c.ws.ID + "/mentions"
		c.h.Get(t, path+"?limit=0", c.alice.Token).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		c.h.Get(t, path+"?limit=x", c.alice.Token).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		c.h.Get(t, path+"?cursor=not-a-cursor", c.alice.Token).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
		outsider := c.h.NewUser(t)
		c.h.Get(t, path, outsider.Token).RequireError(t, http.StatusForbidden, persist.CodeForbidden)
	})
}

// TestHandleBroadcastNamesReserved: no one may take a broadcast's name as their handle, or
// every @here would name them.
func TestHandleBroadcastNamesReserved(t *testing.T) {
	t.Parallel()
	h := servertest.New(t)
	a := h.NewUser(t)
	for _, name := range []string{"here", "Channel", "@everyone"} {
		h.Do(t, servertest.Request{Method: http.MethodPatch, Path: "/api/me", Token: a.Token,
			Body: map[string]any{"handle": name}}).RequireError(t, http.StatusBadRequest, persist.CodeInvalidRequest)
	}
}
